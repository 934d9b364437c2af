package metrics

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// reqA: four single-token chunks. TTFT 100 ms, E2EL 500 ms,
// TPOT (500-100)/3 = 133.333 ms, ITL [100, 100, 200].
func reqA() Request {
	return Request{StartS: 0, ChunkTimesS: []float64{0.1, 0.2, 0.3, 0.5}, ChunkTokens: []int{1, 1, 1, 1},
		PromptTokens: 10, OutputTokens: 4, Success: true, OutputTokensSource: SourceUsage, ChunkTokensSource: SourceUsage}
}

// reqB: two chunks carrying 2 and 3 tokens. TTFT 100 ms, E2EL 300 ms,
// TPOT 200/4 = 50 ms; ITL [0, 66.667, 66.667, 66.667] (vLLM's pooled
// per-chunk ITL would say 200 ms).
func reqB() Request {
	return Request{StartS: 0.9, ArrivalS: 0.85, ChunkTimesS: []float64{0.1, 0.3}, ChunkTokens: []int{2, 3},
		PromptTokens: 20, OutputTokens: 5, Success: true, OutputTokensSource: SourceUsage, ChunkTokensSource: SourceUsage}
}

func TestPerRequest(t *testing.T) {
	a, b := reqA(), reqB()
	if tp, ok := a.TPOT(); !ok || !near(tp, 0.4/3) {
		t.Errorf("A TPOT %v %v", tp, ok)
	}
	if tp, ok := b.TPOT(); !ok || !near(tp, 0.05) {
		t.Errorf("B TPOT %v %v", tp, ok)
	}
	itl := b.AppendITL(nil)
	want := []float64{0, 0.2 / 3, 0.2 / 3, 0.2 / 3}
	if len(itl) != len(want) {
		t.Fatalf("B ITL %v, want %v", itl, want)
	}
	sum := 0.0
	for i := range want {
		if !near(itl[i], want[i]) {
			t.Errorf("B ITL[%d] = %v, want %v", i, itl[i], want[i])
		}
		sum += itl[i]
	}
	if !near(sum/float64(len(itl)), 0.05) {
		t.Errorf("mean ITL %v must equal TPOT", sum/float64(len(itl)))
	}
	if g := b.ChunkGaps(nil); len(g) != 1 || !near(g[0], 0.2) {
		t.Errorf("B chunk gaps %v", g)
	}
	one := Request{ChunkTimesS: []float64{0.1}, ChunkTokens: []int{1}, OutputTokens: 1, Success: true}
	if _, ok := one.TPOT(); ok {
		t.Error("TPOT defined for a single-token request")
	}
}

func TestSummarize(t *testing.T) {
	st := Summarize([]float64{0.1, 0.1, 0.2}, []float64{50, 99})
	if !near(st.Mean, 400.0/3) || !near(st.Median, 100) || !near(st.Std, math.Sqrt(20000.0/9)) {
		t.Errorf("stats %+v", st)
	}
	if !near(st.Percentiles[0].Value, 100) || !near(st.Percentiles[1].Value, 198) {
		t.Errorf("percentiles %+v, want p50 100 p99 198", st.Percentiles)
	}
	empty := Summarize(nil, []float64{99})
	if empty.Mean != 0 || empty.Percentiles[0].Value != 0 || empty.Count != 0 {
		t.Errorf("empty stats %+v", empty)
	}
	one := Summarize([]float64{0.005}, []float64{90})
	if !near(one.Percentiles[0].Value, 5) || one.Std != 0 {
		t.Errorf("single-value stats %+v", one)
	}
}

func TestCompute(t *testing.T) {
	failed := Request{StartS: 0.2, Error: "HTTP 500: boom"}
	reqs := []Request{reqA(), reqB(), failed}
	slo := SLO{TTFTms: 150, TPOTms: 100}
	s := Compute(reqs, 2.0, []float64{99}, slo)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"completed", float64(s.Completed), 2},
		{"failed", float64(s.Failed), 1},
		{"input", float64(s.TotalInputTokens), 30},
		{"output", float64(s.TotalOutputTokens), 9},
		{"req tput", s.RequestThroughput, 1},
		{"out tput", s.OutputThroughput, 4.5},
		{"total tput", s.TotalTokThroughput, 19.5},
		{"goodput", *s.RequestGoodput, 0.5}, // A misses the TPOT SLO
		{"mean ttft", s.TTFT.Mean, 100},
		{"mean tpot", s.TPOT.Mean, (400.0/3 + 50) / 2},
		{"mean e2el", s.E2EL.Mean, 400},
		// ITL pooled per token: [100,100,200,0,66.7,66.7,66.7] → 600/7.
		{"mean itl", s.ITL.Mean, 600.0 / 7},
		// Per chunk (vLLM): [100,100,200,200] → 150.
		{"mean itl chunk", s.ITLChunk.Mean, 150},
		// A's 4 tokens land in second 0; B's 5 in second 1.
		{"max tok/s", s.MaxOutputTokensPerS, 5},
		{"max concurrent", float64(s.MaxConcurrentReqs), 1},
		{"queue mean", s.ClientQueue.Mean, 25},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.OutputTokensSources[SourceUsage] != 2 {
		t.Errorf("sources %v", s.OutputTokensSources)
	}
	if g := Compute(reqs, 2.0, nil, SLO{}).RequestGoodput; g != nil {
		t.Errorf("goodput without SLO = %v, want nil", *g)
	}
}

func TestMaxConcurrentEndBeforeStart(t *testing.T) {
	reqs := []Request{
		{StartS: 0, ChunkTimesS: []float64{1}, ChunkTokens: []int{1}, Success: true},
		{StartS: 1, ChunkTimesS: []float64{1}, ChunkTokens: []int{1}, Success: true},
		{StartS: 0.5, ChunkTimesS: []float64{1}, ChunkTokens: []int{1}, Success: true},
	}
	if got := maxConcurrent(reqs); got != 2 {
		t.Errorf("max concurrent %d, want 2", got)
	}
}

func TestParseSLO(t *testing.T) {
	s, err := ParseSLO("ttft:200,tpot:50 e2el:1000")
	if err != nil || s != (SLO{TTFTms: 200, TPOTms: 50, E2ELms: 1000}) {
		t.Errorf("ParseSLO = %+v, %v", s, err)
	}
	for _, bad := range []string{"ttft", "ttft:x", "foo:1", "tpot:-1", "ttft:NaN"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q) accepted", bad)
		}
	}
}
