// Package result writes one benchmark run as a JSON file with the keys of
// `vllm bench serve --save-result --save-detailed`, so tooling written for
// vLLM reads it, plus our own raw per-request records and provenance.
package result

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/ttis-dev/ttis/bench/metrics"
)

// Run describes one benchmark run for the result file.
type Run struct {
	Date           time.Time
	Backend        string // "openai" (completions) or "openai-chat"
	Endpoint       string
	Label          string
	ModelID        string
	Tokenizer      string
	Dataset        string
	BaseURL        string
	NumPrompts     int
	ISL, OSL       int
	RequestRate    float64
	Burstiness     float64
	MaxConcurrency int
	IgnoreEOS      bool
	// SamplingParams are the sampling fields every request carried.
	SamplingParams map[string]any
	NumWarmups     int
	Seed           int64
	Percentiles    []float64
	SLO            metrics.SLO
	Warnings       []string
	Simulated      bool
	Requests       []metrics.Request
	Summary        metrics.Summary
}

// Build renders the result as an ordered JSON object: vLLM's keys first,
// then ours (prefixed by nothing vLLM uses).
func Build(r *Run) *Object {
	o := &Object{}
	o.Set("date", r.Date.Format("20060102-150405"))
	o.Set("endpoint_type", r.Backend)
	o.Set("backend", r.Backend)
	o.Set("label", nilIfEmpty(r.Label))
	o.Set("model_id", r.ModelID)
	o.Set("tokenizer_id", r.Tokenizer)
	o.Set("num_prompts", r.NumPrompts)
	if math.IsInf(r.RequestRate, 1) || r.RequestRate == 0 {
		o.Set("request_rate", "inf")
	} else {
		o.Set("request_rate", r.RequestRate)
	}
	if math.IsInf(r.Burstiness, 1) {
		o.Set("burstiness", "inf")
	} else {
		o.Set("burstiness", r.Burstiness)
	}
	if r.MaxConcurrency > 0 {
		o.Set("max_concurrency", r.MaxConcurrency)
	} else {
		o.Set("max_concurrency", nil)
	}
	s := &r.Summary
	o.Set("duration", s.DurationS)
	o.Set("completed", s.Completed)
	o.Set("failed", s.Failed)
	o.Set("total_input_tokens", s.TotalInputTokens)
	o.Set("total_output_tokens", s.TotalOutputTokens)
	o.Set("request_throughput", s.RequestThroughput)
	o.Set("request_goodput", s.RequestGoodput)
	o.Set("output_throughput", s.OutputThroughput)
	o.Set("total_token_throughput", s.TotalTokThroughput)
	o.Set("max_output_tokens_per_s", s.MaxOutputTokensPerS)
	o.Set("max_concurrent_requests", s.MaxConcurrentReqs)

	n := len(r.Requests)
	latencies := make([]float64, 0, n)
	queue := make([]float64, 0, n)
	inputLens := make([]int, 0, n)
	outputLens := make([]int, 0, n)
	ttfts := make([]float64, 0, n)
	itls := make([][]float64, 0, n)
	starts := make([]float64, 0, n)
	texts := make([]string, 0, n)
	errs := make([]string, 0, n)
	for i := range r.Requests {
		q := &r.Requests[i]
		ttft, _ := q.TTFT()
		latencies = append(latencies, q.Latency())
		queue = append(queue, q.StartS-q.ArrivalS)
		inputLens = append(inputLens, q.PromptTokens)
		outputLens = append(outputLens, q.OutputTokens)
		ttfts = append(ttfts, ttft)
		itls = append(itls, q.ChunkGaps([]float64{}))
		starts = append(starts, q.StartS)
		texts = append(texts, q.GeneratedText)
		errs = append(errs, q.Error)
	}
	o.Set("latencies", latencies)
	o.Set("queue_times", queue)
	o.Set("input_lens", inputLens)
	o.Set("output_lens", outputLens)
	o.Set("ttfts", ttfts)
	o.Set("itls", itls)
	o.Set("start_times", starts)
	o.Set("generated_texts", texts)
	o.Set("errors", errs)

	setStats(o, "ttft", s.TTFT)
	setStats(o, "tpot", s.TPOT)
	setStats(o, "itl", s.ITL)
	setStats(o, "e2el", s.E2EL)
	if r.MaxConcurrency > 0 {
		setStats(o, "client_queue_time", s.ClientQueue)
	}

	// Our additions.
	setStats(o, "itl_chunk", s.ITLChunk)
	tputUser := 0.0
	if s.TPOT.Mean > 0 {
		tputUser = 1000 / s.TPOT.Mean
	}
	o.Set("tput_user", tputUser)
	o.Set("tput_user_source", "1000/mean_tpot_ms")
	o.Set("tps_input_throughput", s.TotalTokThroughput-s.OutputThroughput)
	o.Set("tps_output_throughput", s.OutputThroughput)
	o.Set("tps_total_throughput", s.TotalTokThroughput)
	o.Set("input_sequence_length", r.ISL)
	o.Set("output_sequence_length", r.OSL)
	o.Set("dataset_name", r.Dataset)
	o.Set("base_url", r.BaseURL)
	o.Set("endpoint", r.Endpoint)
	o.Set("ignore_eos", r.IgnoreEOS)
	o.Set("sampling_params", r.SamplingParams)
	o.Set("num_warmups", r.NumWarmups)
	o.Set("seed", r.Seed)
	o.Set("simulated", r.Simulated)
	o.Set("output_tokens_source", s.OutputTokensSources)
	o.Set("chunk_tokens_source", s.ChunkTokensSources)
	o.Set("itl_definition", "per output token: a chunk's gap shared among its tokens; itl_chunk and itls are per-chunk gaps as in vLLM")
	o.Set("failure_reasons", failureReasons(r.Requests))
	o.Set("stale_connection_retries", staleRetries(r.Requests))
	if a := serverAgreement(r.Requests); a != nil {
		o.Set("server_timings_agreement", a)
	}
	if r.SLO.IsZero() {
		o.Set("goodput_slo_ms", nil)
	} else {
		o.Set("goodput_slo_ms", map[string]float64{"ttft": r.SLO.TTFTms, "tpot": r.SLO.TPOTms, "e2el": r.SLO.E2ELms})
	}
	o.Set("warnings", nonNil(r.Warnings))
	o.Set("requests", r.Requests)
	return o
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// staleRetries counts requests sent twice because the server had closed
// their kept-alive connection before answering (runtime/openai).
func staleRetries(reqs []metrics.Request) int {
	n := 0
	for i := range reqs {
		if reqs[i].Retried {
			n++
		}
	}
	return n
}

// Agreement compares what the client measured with what the server says
// it did (llama.cpp's per-request "timings"), so a reader can tell the
// client's own overhead from the server's: TTFT against the server's
// prompt processing time, and TPOT against its time per generated token.
// Differences are client minus server, in milliseconds, medians over the
// successful requests that carried timings.
type Agreement struct {
	Requests int `json:"requests"`
	// TTFTMinusPromptMs is client TTFT minus the server's prompt_ms: the
	// transport, the queue and the first token's decode.
	TTFTMinusPromptMs *float64 `json:"median_ttft_minus_server_prompt_ms"`
	// TPOTMinusServerMs is client TPOT minus the server's time per token,
	// predicted_ms / (predicted_n - 1): llama.cpp starts predicted_ms at
	// the first generated token, so it spans predicted_n - 1 gaps, as
	// TPOT does.
	TPOTMinusServerMs *float64 `json:"median_tpot_minus_server_per_token_ms"`
	// TPOTRatio is client TPOT over the server's time per token.
	TPOTRatio *float64 `json:"median_tpot_ratio"`
	// OutputTokensAgree counts requests whose output token count equals
	// the server's predicted_n.
	OutputTokensAgree int `json:"output_tokens_agree"`
}

// serverAgreement is nil when no request carried server timings.
func serverAgreement(reqs []metrics.Request) *Agreement {
	var ttft, tpot, ratio []float64
	a := &Agreement{}
	for i := range reqs {
		q := &reqs[i]
		st := q.ServerTimings
		if !q.Success || st == nil {
			continue
		}
		a.Requests++
		if first, ok := q.TTFT(); ok {
			ttft = append(ttft, first*1000-st.PromptMS)
		}
		if st.PredictedN > 1 && q.OutputTokens > 1 {
			server := st.PredictedMS / float64(st.PredictedN-1)
			client := (q.Latency() - q.ChunkTimesS[0]) * 1000 / float64(q.OutputTokens-1)
			tpot = append(tpot, client-server)
			if server > 0 {
				ratio = append(ratio, client/server)
			}
		}
		if q.OutputTokens == st.PredictedN {
			a.OutputTokensAgree++
		}
	}
	if a.Requests == 0 {
		return nil
	}
	a.TTFTMinusPromptMs, a.TPOTMinusServerMs, a.TPOTRatio = median(ttft), median(tpot), median(ratio)
	return a
}

// median is nil for no values.
func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return &m
}

// failureReasons counts the failed requests by error message.
func failureReasons(reqs []metrics.Request) map[string]int {
	m := map[string]int{}
	for i := range reqs {
		if !reqs[i].Success {
			m[reqs[i].Error]++
		}
	}
	return m
}

func setStats(o *Object, name string, st metrics.Stats) {
	o.Set("mean_"+name+"_ms", st.Mean)
	o.Set("median_"+name+"_ms", st.Median)
	o.Set("std_"+name+"_ms", st.Std)
	for _, p := range st.Percentiles {
		o.Set("p"+FormatPercentile(p.P)+"_"+name+"_ms", p.Value)
	}
}

// FormatPercentile prints a percentile the way vLLM names keys: 99 → "99",
// 99.9 → "99.9".
func FormatPercentile(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// ParsePercentiles reads a comma list such as "50,90,99,99.9".
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p <= 0 || p >= 100 || math.IsNaN(p) {
			return nil, fmt.Errorf("percentile %q must be a number in (0, 100)", f)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no percentiles in %q", s)
	}
	return out, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// FileName is run.py's pattern (benchmarking/run_benchmarks.py of the
// seeds' release, 0.0.4):
// benchmark_<model>_<device>_<ts>_isl-<I>_osl-<O>_maxcon-<C>_n-<N>.json,
// the names its report workflow globs (benchmark_<model>_<device>_*.json)
// and parses. The model is its base name and the device is left out when
// unknown; both have anything but [A-Za-z0-9._-] replaced. The timestamp
// is UTC (run.py writes local time).
func FileName(model, device string, ts time.Time, isl, osl, maxcon, n int) string {
	base := model
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	base = unsafeName.ReplaceAllString(base, "_")
	if base == "" {
		base = "model"
	}
	if d := unsafeName.ReplaceAllString(device, "_"); d != "" {
		base += "_" + d
	}
	return fmt.Sprintf("benchmark_%s_%s_isl-%d_osl-%d_maxcon-%d_n-%d.json",
		base, ts.UTC().Format(fileTimeLayout), isl, osl, maxcon, n)
}

// fileTimeLayout is the timestamp of result file names.
const fileTimeLayout = "2006-01-02_15-04-05"

// FileInfo is what a result file's name says.
type FileInfo struct {
	// Prefix is "<model>" or "<model>_<device>".
	Prefix                   string
	Time                     time.Time
	ISL, OSL, MaxConcurrency int
	NumPrompts               int
}

var fileNameRE = regexp.MustCompile(`^benchmark_(.+)_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})_isl-(\d{1,9})_osl-(\d{1,9})_maxcon-(\d{1,9})_n-(\d{1,9})\.json$`)

// ParseFileName reads a result file name written by FileName (or by
// run.py), as run.py's summary report reads its parameters from it.
func ParseFileName(name string) (FileInfo, error) {
	m := fileNameRE.FindStringSubmatch(name)
	if m == nil {
		return FileInfo{}, fmt.Errorf("%q is not a benchmark result name (benchmark_<model>_<device>_<ts>_isl-<I>_osl-<O>_maxcon-<C>_n-<N>.json)", name)
	}
	ts, err := time.Parse(fileTimeLayout, m[2])
	if err != nil {
		return FileInfo{}, fmt.Errorf("%q: timestamp: %w", name, err)
	}
	var v [4]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[3+i]) // at most 9 digits: no overflow
	}
	return FileInfo{Prefix: m[1], Time: ts, ISL: v[0], OSL: v[1], MaxConcurrency: v[2], NumPrompts: v[3]}, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// folder and a rename, so a crash never leaves a half file under the final
// name.
func WriteFileAtomic(path string, data []byte) error {
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Object is a JSON object that keeps its keys in insertion order, so the
// file reads like vLLM's.
type Object struct {
	keys []string
	vals map[string]any
}

// Set adds or replaces a key.
func (o *Object) Set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Get returns a key's value.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// MarshalJSON writes the keys in insertion order. NaN and infinities, which
// JSON cannot hold, become null.
func (o *Object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		buf = append(buf, kb...)
		buf = append(buf, ':')
		v := o.vals[k]
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v = nil
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("result key %s: %w", k, err)
		}
		buf = append(buf, vb...)
	}
	return append(buf, '}'), nil
}
