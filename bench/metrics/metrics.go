// Package metrics turns raw per-request timestamps into the serving metrics
// of `vllm bench serve` (TTFT, TPOT, ITL, E2EL, throughputs, goodput), with
// one deliberate difference: ITL is per output token, not per stream chunk.
//
// Definitions (times are seconds from the request's dispatch):
//   - TTFT is the arrival time of the first chunk that carries a token.
//   - E2EL is the arrival time of the last token-bearing chunk (the usage
//     chunk and [DONE] are not tokens).
//   - TPOT = (E2EL - TTFT) / (output_tokens - 1), for requests with more than
//     one output token; statistics are taken over requests.
//   - ITL: every output token after the first gets one value. A chunk that
//     carries k tokens and arrives g seconds after the previous chunk gives
//     each of its k tokens g/k; the tokens that arrived with the first
//     chunk, beyond the first token, get 0. So one request's ITL values sum
//     to E2EL - TTFT and their mean equals its TPOT. vLLM instead pools one
//     gap per chunk (inflated when chunks hold several tokens, vLLM issue
//     #27485); that per-chunk view is kept as ITLChunk.
//   - Request, output and total token throughputs divide by the benchmark
//     duration; goodput counts requests meeting every SLO.
//   - Statistics: mean, median, population std, and percentiles with
//     linear interpolation (numpy's defaults); an empty list gives 0.
package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/runtime/openai"
)

// Output token count sources recorded in Request.OutputTokensSource.
const (
	// SourceUsage: the server's usage.completion_tokens.
	SourceUsage = "usage"
	// SourceTokenize: the generated text re-tokenized with the server's
	// /tokenize.
	SourceTokenize = "tokenize"
	// SourceChunks: the number of token-bearing chunks (one token each).
	SourceChunks = "chunks"
)

// Request is the raw record of one request. It is kept in the result file
// so any other convention can be recomputed from it.
type Request struct {
	// ArrivalS is when the schedule released the request, StartS when it
	// was dispatched (after waiting for a concurrency slot), both in seconds
	// from the benchmark's start.
	ArrivalS float64 `json:"arrival_s"`
	StartS   float64 `json:"start_s"`
	// ChunkTimesS are the arrival times of the token-bearing chunks, in
	// seconds from StartS; ChunkTokens the number of tokens each carried.
	ChunkTimesS []float64 `json:"chunk_times_s"`
	ChunkTokens []int     `json:"chunk_tokens"`
	// PromptTokens is the prompt length (server usage when sent, else the
	// dataset's count).
	PromptTokens int `json:"prompt_tokens"`
	// OutputTokens and where the count came from (SourceUsage, ...).
	OutputTokens       int    `json:"output_tokens"`
	OutputTokensSource string `json:"output_tokens_source"`
	// ChunkTokensSource says how ChunkTokens was known: "usage" (per-chunk
	// continuous usage stats), "one-per-chunk" (no per-chunk counts and the
	// final usage agreed), or "estimated-from-text" (the final usage was
	// higher than the chunk count and the surplus was shared by chunk text
	// length).
	ChunkTokensSource string `json:"chunk_tokens_source"`
	Success           bool   `json:"success"`
	Error             string `json:"error,omitempty"`
	GeneratedText     string `json:"generated_text,omitempty"`
	// Retried is set when the request was sent a second time because the
	// server had closed its kept-alive connection before answering (the
	// first send never reached a live server; see runtime/openai).
	Retried bool `json:"retried,omitempty"`
	// ServerTimings is the server's own account of the request, when it
	// sends one (llama.cpp's "timings").
	ServerTimings *openai.Timings `json:"server_timings,omitempty"`
}

// TTFT returns the time to first token, or false when no token arrived.
func (r *Request) TTFT() (float64, bool) {
	if len(r.ChunkTimesS) == 0 {
		return 0, false
	}
	return r.ChunkTimesS[0], true
}

// Latency returns the end-to-end latency (last token-bearing chunk).
func (r *Request) Latency() float64 {
	if len(r.ChunkTimesS) == 0 {
		return 0
	}
	return r.ChunkTimesS[len(r.ChunkTimesS)-1]
}

// TPOT returns the time per output token after the first, or false when the
// request produced at most one token.
func (r *Request) TPOT() (float64, bool) {
	ttft, ok := r.TTFT()
	if !ok || r.OutputTokens <= 1 {
		return 0, false
	}
	return (r.Latency() - ttft) / float64(r.OutputTokens-1), true
}

// AppendITL appends the per-token inter-token latencies (see the package
// doc) to dst.
func (r *Request) AppendITL(dst []float64) []float64 {
	for i, k := range r.ChunkTokens {
		if i == 0 {
			for j := 1; j < k; j++ {
				dst = append(dst, 0)
			}
			continue
		}
		if k <= 0 {
			continue
		}
		g := (r.ChunkTimesS[i] - r.ChunkTimesS[i-1]) / float64(k)
		for j := 0; j < k; j++ {
			dst = append(dst, g)
		}
	}
	return dst
}

// ChunkGaps appends the gaps between successive token-bearing chunks (vLLM's
// per-chunk "itl") to dst.
func (r *Request) ChunkGaps(dst []float64) []float64 {
	for i := 1; i < len(r.ChunkTimesS); i++ {
		dst = append(dst, r.ChunkTimesS[i]-r.ChunkTimesS[i-1])
	}
	return dst
}

// SLO holds goodput thresholds in milliseconds; zero means no threshold.
type SLO struct {
	TTFTms, TPOTms, E2ELms float64
}

// IsZero reports whether no threshold is set.
func (s SLO) IsZero() bool { return s.TTFTms == 0 && s.TPOTms == 0 && s.E2ELms == 0 }

// ParseSLO reads vLLM's --goodput syntax: "ttft:200 tpot:50" or
// "ttft:200,tpot:50", values in ms.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			return slo, fmt.Errorf("goodput %q: want KEY:MS", f)
		}
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms <= 0 || math.IsInf(ms, 0) || math.IsNaN(ms) {
			return slo, fmt.Errorf("goodput %q: %q is not a positive number of ms", f, v)
		}
		switch k {
		case "ttft":
			slo.TTFTms = ms
		case "tpot":
			slo.TPOTms = ms
		case "e2el":
			slo.E2ELms = ms
		default:
			return slo, fmt.Errorf("goodput %q: key must be ttft, tpot or e2el", f)
		}
	}
	return slo, nil
}

// Stats summarises one metric in milliseconds.
type Stats struct {
	Count       int
	Mean        float64
	Median      float64
	Std         float64
	Min, Max    float64
	Percentiles []Percentile
}

// Percentile is one requested percentile value.
type Percentile struct {
	P     float64
	Value float64
}

// Summarize computes Stats over values given in seconds, reporting ms.
func Summarize(valuesS []float64, percentiles []float64) Stats {
	st := Stats{Count: len(valuesS)}
	for _, p := range percentiles {
		st.Percentiles = append(st.Percentiles, Percentile{P: p})
	}
	if len(valuesS) == 0 {
		return st
	}
	v := make([]float64, len(valuesS))
	for i, x := range valuesS {
		v[i] = x * 1000
	}
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	st.Mean = sum / float64(len(v))
	var ss float64
	for _, x := range v {
		d := x - st.Mean
		ss += d * d
	}
	st.Std = math.Sqrt(ss / float64(len(v)))
	st.Min, st.Max = v[0], v[len(v)-1]
	st.Median = percentileSorted(v, 50)
	for i := range st.Percentiles {
		st.Percentiles[i].Value = percentileSorted(v, st.Percentiles[i].P)
	}
	return st
}

// percentileSorted is numpy.percentile's default (linear) method.
func percentileSorted(v []float64, p float64) float64 {
	if len(v) == 1 {
		return v[0]
	}
	rank := p / 100 * float64(len(v)-1)
	lo := int(math.Floor(rank))
	if lo >= len(v)-1 {
		return v[len(v)-1]
	}
	frac := rank - float64(lo)
	return v[lo] + (v[lo+1]-v[lo])*frac
}

// Summary is the aggregate over one benchmark run.
type Summary struct {
	DurationS          float64
	Completed, Failed  int
	TotalInputTokens   int
	TotalOutputTokens  int
	RequestThroughput  float64
	OutputThroughput   float64
	TotalTokThroughput float64
	// RequestGoodput is nil when no SLO was given.
	RequestGoodput      *float64
	MaxOutputTokensPerS float64
	MaxConcurrentReqs   int
	TTFT, TPOT, ITL     Stats
	E2EL, ITLChunk      Stats
	ClientQueue         Stats
	OutputTokensSources map[string]int
	ChunkTokensSources  map[string]int
}

// Compute aggregates the requests of a run that took durationS seconds.
// Only successful requests enter the statistics.
func Compute(reqs []Request, durationS float64, percentiles []float64, slo SLO) Summary {
	sum := Summary{DurationS: durationS, OutputTokensSources: map[string]int{}, ChunkTokensSources: map[string]int{}}
	var ttfts, tpots, itls, e2els, gaps, queue []float64
	good := 0
	for i := range reqs {
		r := &reqs[i]
		if !r.Success {
			sum.Failed++
			continue
		}
		sum.Completed++
		sum.TotalInputTokens += r.PromptTokens
		sum.TotalOutputTokens += r.OutputTokens
		sum.OutputTokensSources[r.OutputTokensSource]++
		sum.ChunkTokensSources[r.ChunkTokensSource]++
		ttft, _ := r.TTFT()
		ttfts = append(ttfts, ttft)
		tpot, hasTPOT := r.TPOT()
		if hasTPOT {
			tpots = append(tpots, tpot)
		}
		itls = r.AppendITL(itls)
		gaps = r.ChunkGaps(gaps)
		e2els = append(e2els, r.Latency())
		queue = append(queue, r.StartS-r.ArrivalS)
		if !slo.IsZero() && meetsSLO(slo, ttft, tpot, r.Latency()) {
			good++
		}
	}
	if durationS > 0 {
		sum.RequestThroughput = float64(sum.Completed) / durationS
		sum.OutputThroughput = float64(sum.TotalOutputTokens) / durationS
		sum.TotalTokThroughput = float64(sum.TotalInputTokens+sum.TotalOutputTokens) / durationS
		if !slo.IsZero() {
			g := float64(good) / durationS
			sum.RequestGoodput = &g
		}
	} else if !slo.IsZero() {
		var zero float64
		sum.RequestGoodput = &zero
	}
	sum.TTFT = Summarize(ttfts, percentiles)
	sum.TPOT = Summarize(tpots, percentiles)
	sum.ITL = Summarize(itls, percentiles)
	sum.E2EL = Summarize(e2els, percentiles)
	sum.ITLChunk = Summarize(gaps, percentiles)
	sum.ClientQueue = Summarize(queue, percentiles)
	sum.MaxOutputTokensPerS = maxTokensPerSecond(reqs)
	sum.MaxConcurrentReqs = maxConcurrent(reqs)
	return sum
}

// meetsSLO applies vLLM's goodput rule; TPOT counts as 0 for requests with
// at most one output token.
func meetsSLO(slo SLO, ttft, tpot, e2el float64) bool {
	if slo.TTFTms > 0 && ttft*1000 > slo.TTFTms {
		return false
	}
	if slo.TPOTms > 0 && tpot*1000 > slo.TPOTms {
		return false
	}
	if slo.E2ELms > 0 && e2el*1000 > slo.E2ELms {
		return false
	}
	return true
}

// maxTokensPerSecond puts every output token of the successful requests
// into one-second buckets of benchmark time and returns the fullest bucket.
// Unlike vLLM it counts tokens, not chunks.
func maxTokensPerSecond(reqs []Request) float64 {
	buckets := map[int64]int{}
	for i := range reqs {
		r := &reqs[i]
		if !r.Success {
			continue
		}
		for j, t := range r.ChunkTimesS {
			buckets[int64(math.Floor(r.StartS+t))] += r.ChunkTokens[j]
		}
	}
	best := 0
	for _, n := range buckets {
		best = max(best, n)
	}
	return float64(best)
}

// maxConcurrent is a sweep line over [start, start+latency) of the
// successful requests; an end sorts before a start at the same instant.
func maxConcurrent(reqs []Request) int {
	type edge struct {
		t     float64
		delta int
	}
	var edges []edge
	for i := range reqs {
		r := &reqs[i]
		if !r.Success {
			continue
		}
		edges = append(edges, edge{r.StartS, 1}, edge{r.StartS + r.Latency(), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.delta - b.delta
	})
	cur, best := 0, 0
	for _, e := range edges {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}
