// Package loadgen drives one benchmark run: it releases requests on an
// arrival schedule (all at once, Poisson, or gamma-distributed gaps), caps
// the requests in flight, runs warm-up requests first, and collects the raw
// per-request records.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/dataset"
	"github.com/ttis-dev/ttis/bench/metrics"
)

// Doer sends one request; *client.Client satisfies it.
type Doer interface {
	Do(ctx context.Context, p client.Prompt, requestID string) metrics.Request
}

// Options shape the traffic.
type Options struct {
	// MaxConcurrency caps requests in flight (0: no cap).
	MaxConcurrency int
	// RequestRate is the mean arrival rate in requests/s; +Inf (or 0)
	// releases every request at once.
	RequestRate float64
	// Burstiness is the gamma shape of the gaps: 1 is Poisson, below 1
	// burstier, +Inf evenly spaced.
	Burstiness float64
	// NumWarmups requests with the first prompt run before the measured
	// part, under the same concurrency cap.
	NumWarmups int
	Seed       int64
	// RequestIDPrefix starts every x-request-id.
	RequestIDPrefix string
	// OnDone is called after each measured request (progress display).
	OnDone func(metrics.Request)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Outcome is one run's raw data.
type Outcome struct {
	StartedAt time.Time
	DurationS float64
	Requests  []metrics.Request
	// WarmupFailures counts failed warm-up requests.
	WarmupFailures int
}

// Run sends every prompt once and returns the records in prompt order. It
// returns an error only for bad options or a cancelled context; request
// failures are in the records.
func Run(ctx context.Context, d Doer, prompts []dataset.Prompt, o Options) (*Outcome, error) {
	if len(prompts) == 0 {
		return nil, errors.New("loadgen: no prompts")
	}
	if o.MaxConcurrency < 0 {
		return nil, fmt.Errorf("loadgen: max concurrency %d is negative", o.MaxConcurrency)
	}
	if o.RequestRate < 0 || math.IsNaN(o.RequestRate) {
		return nil, fmt.Errorf("loadgen: request rate %g must be positive or inf", o.RequestRate)
	}
	if o.Burstiness == 0 {
		o.Burstiness = 1
	}
	if o.Burstiness < 0 || math.IsNaN(o.Burstiness) {
		return nil, fmt.Errorf("loadgen: burstiness %g must be positive", o.Burstiness)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	slots := o.MaxConcurrency
	if slots == 0 {
		slots = len(prompts)
	}
	sem := make(chan struct{}, slots)
	out := &Outcome{}

	if o.NumWarmups > 0 {
		out.WarmupFailures = warmup(ctx, d, toClient(prompts[0]), o, sem)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}

	gaps := ArrivalGaps(len(prompts), o.RequestRate, o.Burstiness, o.Seed)
	out.Requests = make([]metrics.Request, len(prompts))
	start := now()
	out.StartedAt = start
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	// The dispatcher releases requests in order: it waits for each one's
	// scheduled arrival, then for a free slot. Arrival times are the
	// schedule's, so time spent waiting for a slot shows as queue time.
	var next time.Duration
	for i := range prompts {
		next += gaps[i]
		if wait := next - now().Sub(start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				wg.Wait()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		arrival := next.Seconds()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			startS := now().Sub(start).Seconds()
			rec := d.Do(ctx, toClient(prompts[i]), fmt.Sprintf("%s%d", o.RequestIDPrefix, i))
			rec.ArrivalS, rec.StartS = arrival, startS
			out.Requests[i] = rec
			if o.OnDone != nil {
				progressMu.Lock()
				o.OnDone(rec)
				progressMu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	out.DurationS = now().Sub(start).Seconds()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func warmup(ctx context.Context, d Doer, p client.Prompt, o Options, sem chan struct{}) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range o.NumWarmups {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return failed
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec := d.Do(ctx, p, fmt.Sprintf("%swarmup-%d", o.RequestIDPrefix, i))
			if !rec.Success {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

func toClient(p dataset.Prompt) client.Prompt {
	return client.Prompt{Text: p.Text, PromptTokens: p.PromptTokens, OutputTokens: p.OutputTokens}
}

// ArrivalGaps returns the gap before each of n requests. The first request
// goes at once; later gaps follow Gamma(shape=b, scale=1/(rate*b)), which is
// exponential (Poisson arrivals) for b=1 and constant for b=+Inf. An
// infinite or zero rate gives all-zero gaps.
func ArrivalGaps(n int, rate, burstiness float64, seed int64) []time.Duration {
	gaps := make([]time.Duration, n)
	if rate == 0 || math.IsInf(rate, 1) {
		return gaps
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5851f42d4c957f2d))
	for i := 1; i < n; i++ {
		var s float64
		if math.IsInf(burstiness, 1) {
			s = 1 / rate
		} else {
			s = gamma(rng, burstiness) / (rate * burstiness)
		}
		gaps[i] = time.Duration(s * float64(time.Second))
	}
	return gaps
}

// gamma draws from Gamma(shape k, scale 1) with Marsaglia and Tsang's
// method (boosted for k < 1).
func gamma(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	// Each try succeeds with probability above 0.95; the bound only guards
	// against a broken random source.
	for range 1000 {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
	return k
}
