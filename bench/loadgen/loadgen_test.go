package loadgen

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/dataset"
	"github.com/ttis-dev/ttis/bench/metrics"
)

// fakeDoer records how many requests are in flight and in which order they
// started.
type fakeDoer struct {
	inFlight, peak atomic.Int32
	mu             sync.Mutex
	order          []string
	hold           time.Duration
}

func (f *fakeDoer) Do(ctx context.Context, p client.Prompt, id string) metrics.Request {
	n := f.inFlight.Add(1)
	for {
		old := f.peak.Load()
		if n <= old || f.peak.CompareAndSwap(old, n) {
			break
		}
	}
	f.mu.Lock()
	f.order = append(f.order, id)
	f.mu.Unlock()
	time.Sleep(f.hold)
	f.inFlight.Add(-1)
	return metrics.Request{Success: true, ChunkTimesS: []float64{0.001}, ChunkTokens: []int{1}, OutputTokens: 1, PromptTokens: p.PromptTokens}
}

func prompts(n int) []dataset.Prompt {
	ps := make([]dataset.Prompt, n)
	for i := range ps {
		ps[i] = dataset.Prompt{Text: "x", PromptTokens: 1, OutputTokens: 1}
	}
	return ps
}

func TestRunConcurrencyCapAndOrder(t *testing.T) {
	f := &fakeDoer{hold: 2 * time.Millisecond}
	done := 0
	out, err := Run(context.Background(), f, prompts(20), Options{MaxConcurrency: 3, NumWarmups: 2, RequestIDPrefix: "r", OnDone: func(metrics.Request) { done++ }})
	if err != nil {
		t.Fatal(err)
	}
	if p := f.peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak in flight %d, want 3 (cap)", p)
	}
	if len(out.Requests) != 20 || done != 20 {
		t.Fatalf("%d records, %d progress calls", len(out.Requests), done)
	}
	if w := map[string]bool{f.order[0]: true, f.order[1]: true}; !w["rwarmup-0"] || !w["rwarmup-1"] {
		t.Errorf("warm-ups did not run first: %v", f.order[:3])
	}
	for i, r := range out.Requests {
		if !r.Success || r.StartS < r.ArrivalS || r.ArrivalS != 0 {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if out.DurationS <= 0 {
		t.Errorf("duration %v", out.DurationS)
	}

	serial := &fakeDoer{}
	if _, err := Run(context.Background(), serial, prompts(10), Options{MaxConcurrency: 1, RequestIDPrefix: "s"}); err != nil {
		t.Fatal(err)
	}
	for i, id := range serial.order {
		if want := "s" + string(rune('0'+i)); id != want {
			t.Fatalf("order %v: requests must start in prompt order", serial.order)
		}
	}
}

func TestRunRateSpacing(t *testing.T) {
	f := &fakeDoer{}
	out, err := Run(context.Background(), f, prompts(5), Options{RequestRate: 200, Burstiness: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Requests {
		if want := float64(i) * 0.005; math.Abs(r.ArrivalS-want) > 1e-9 || r.StartS < r.ArrivalS {
			t.Errorf("request %d arrival %v start %v, want arrival %v", i, r.ArrivalS, r.StartS, want)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, &fakeDoer{}, prompts(3), Options{RequestRate: 1}); err == nil {
		t.Error("cancelled run returned no error")
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{MaxConcurrency: -1}, {RequestRate: -1}, {Burstiness: -2}} {
		if _, err := Run(context.Background(), &fakeDoer{}, prompts(1), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := Run(context.Background(), &fakeDoer{}, nil, Options{}); err == nil {
		t.Error("no prompts accepted")
	}
}

func TestArrivalGaps(t *testing.T) {
	if g := ArrivalGaps(4, math.Inf(1), 1, 0); g[1] != 0 || g[3] != 0 {
		t.Errorf("infinite rate gaps %v", g)
	}
	const n, rate = 20000, 50.0
	for _, b := range []float64{1, 0.5, 3} {
		g := ArrivalGaps(n, rate, b, 42)
		if g[0] != 0 {
			t.Fatal("first request must go at once")
		}
		var sum, sq float64
		for _, d := range g[1:] {
			s := d.Seconds()
			sum += s
			sq += s * s
		}
		mean := sum / (n - 1)
		cv2 := (sq/(n-1) - mean*mean) / (mean * mean)
		// Gamma(k): mean 1/rate, squared coefficient of variation 1/k.
		if math.Abs(mean*rate-1) > 0.05 || math.Abs(cv2*b-1) > 0.1 {
			t.Errorf("burstiness %v: mean gap %v (want %v), cv² %v (want %v)", b, mean, 1/rate, cv2, 1/b)
		}
	}
	a, b := ArrivalGaps(10, 5, 1, 7), ArrivalGaps(10, 5, 1, 7)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("gaps not reproducible with the same seed")
		}
	}
}
