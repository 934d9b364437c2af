package result

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/runtime/openai"
)

func TestFileName(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := FileName("meta-llama/Llama-3.1-8B-Instruct", "n300", ts, 128, 1024, 32, 128)
	// Seed 001's name for the same point: benchmark_Llama-3.2-1B-Instruct_n300_2025-03-26_19-35-09_isl-128_osl-128_maxcon-1_n-8.json
	if want := "benchmark_Llama-3.1-8B-Instruct_n300_2026-01-02_03-04-05_isl-128_osl-1024_maxcon-32_n-128.json"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := FileName("/models/tiny model.gguf", "", ts, 1, 1, 0, 1); !strings.HasPrefix(got, "benchmark_tiny_model.gguf_2026") {
		t.Errorf("unsafe name not cleaned: %s", got)
	}
	fi, err := ParseFileName("benchmark_Llama-3.2-1B-Instruct_n300_2025-03-26_19-35-09_isl-128_osl-128_maxcon-1_n-8.json")
	if err != nil || fi.Prefix != "Llama-3.2-1B-Instruct_n300" || fi.ISL != 128 || fi.OSL != 128 || fi.MaxConcurrency != 1 || fi.NumPrompts != 8 ||
		!fi.Time.Equal(time.Date(2025, 3, 26, 19, 35, 9, 0, time.UTC)) {
		t.Errorf("ParseFileName = %+v, %v", fi, err)
	}
	for _, bad := range []string{"benchmark_x.json", "summary.json", "benchmark_m_2025-13-01_00-00-00_isl-1_osl-1_maxcon-1_n-1.json",
		"benchmark_m_2025-01-01_00-00-00_isl-1_osl-1_maxcon-1_n-99999999999.json"} {
		if _, err := ParseFileName(bad); err == nil {
			t.Errorf("ParseFileName accepted %s", bad)
		}
	}
}

func FuzzParseFileName(f *testing.F) {
	f.Add("benchmark_Llama-3.2-1B-Instruct_n300_2025-03-26_19-35-09_isl-128_osl-128_maxcon-1_n-8.json")
	f.Add("benchmark__2025-03-26_19-35-09_isl-0_osl-0_maxcon-0_n-0.json")
	f.Fuzz(func(t *testing.T, name string) {
		fi, err := ParseFileName(name)
		if err != nil {
			return
		}
		if fi.ISL < 0 || fi.OSL < 0 || fi.MaxConcurrency < 0 || fi.NumPrompts < 0 {
			t.Fatalf("%q parsed as %+v", name, fi)
		}
		// A name of safe characters writes back as it was read.
		if again := FileName(fi.Prefix, "", fi.Time, fi.ISL, fi.OSL, fi.MaxConcurrency, fi.NumPrompts); !unsafeName.MatchString(fi.Prefix) && again != name {
			t.Fatalf("%q parsed as %+v, written back as %q", name, fi, again)
		}
	})
}

func TestBuildKeys(t *testing.T) {
	reqs := []metrics.Request{
		{ChunkTimesS: []float64{0.1, 0.2}, ChunkTokens: []int{1, 1}, OutputTokens: 2, PromptTokens: 4, Success: true, OutputTokensSource: metrics.SourceUsage},
		{Error: "HTTP 500: boom"},
	}
	run := &Run{Date: time.Unix(0, 0), Backend: "openai", ModelID: "m", NumPrompts: 2, RequestRate: math.Inf(1), Burstiness: 1,
		MaxConcurrency: 1, Percentiles: []float64{99, 99.9}, Requests: reqs,
		Summary: metrics.Compute(reqs, 1, []float64{99, 99.9}, metrics.SLO{})}
	b, err := json.Marshal(Build(run))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "backend", "endpoint_type", "model_id", "tokenizer_id", "num_prompts", "duration", "completed", "failed",
		"total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"max_output_tokens_per_s", "max_concurrent_requests", "latencies", "input_lens", "output_lens", "ttfts", "itls", "start_times",
		"generated_texts", "errors", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "p99.9_tpot_ms", "mean_itl_ms",
		"mean_e2el_ms", "mean_client_queue_time_ms", "tput_user", "requests", "failure_reasons"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %s", k)
		}
	}
	if m["request_rate"] != "inf" || m["completed"] != 1.0 || m["failed"] != 1.0 || m["request_goodput"] != nil {
		t.Errorf("values %v %v %v %v", m["request_rate"], m["completed"], m["failed"], m["request_goodput"])
	}
	if fr := m["failure_reasons"].(map[string]any); fr["HTTP 500: boom"] != 1.0 {
		t.Errorf("failure reasons %v", fr)
	}
	if !strings.HasPrefix(string(b), `{"date":`) {
		t.Errorf("keys out of order: %.40s", b)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteFileAtomic(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	ents, _ := os.ReadDir(dir)
	if string(b) != "two" || len(ents) != 1 {
		t.Errorf("content %q, %d entries (temp files left?)", b, len(ents))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "r.json"), []byte("x")); err == nil {
		t.Error("write into a missing folder succeeded")
	}
}

func TestParsePercentiles(t *testing.T) {
	p, err := ParsePercentiles("50, 90,99.9")
	if err != nil || len(p) != 3 || p[2] != 99.9 || FormatPercentile(p[2]) != "99.9" {
		t.Errorf("%v %v", p, err)
	}
	for _, bad := range []string{"", "0", "100", "x", "-5"} {
		if _, err := ParsePercentiles(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// A server that reports its own timings (llama.cpp) is compared with what
// the client measured; one that does not gets no agreement section.
func TestServerTimingsAgreement(t *testing.T) {
	req := func(ttftS, lastS float64, out int, st *openai.Timings) metrics.Request {
		return metrics.Request{Success: true, ChunkTimesS: []float64{ttftS, lastS}, ChunkTokens: []int{1, out - 1}, OutputTokens: out, ServerTimings: st}
	}
	reqs := []metrics.Request{
		req(0.012, 0.112, 11, &openai.Timings{PromptN: 8, PromptMS: 10, PredictedN: 11, PredictedMS: 100}),
		req(0.020, 0.220, 11, &openai.Timings{PromptN: 8, PromptMS: 15, PredictedN: 10, PredictedMS: 162}),
		{Success: false, Error: "x", ServerTimings: &openai.Timings{PromptMS: 1}},
	}
	reqs[0].Retried = true
	a := serverAgreement(reqs)
	if a == nil || a.Requests != 2 || a.OutputTokensAgree != 1 || a.TTFTMinusPromptMs == nil || math.Abs(*a.TTFTMinusPromptMs-3.5) > 1e-9 {
		t.Fatalf("agreement %+v", a)
	}
	// Client TPOT 10 and 20 ms; server 10 and 18 ms per token: predicted_ms
	// spans the gaps after the first token (100 ms over 11 tokens is 10 gaps
	// of 10 ms, as llama-server counts it), so the first agrees exactly.
	if math.Abs(*a.TPOTMinusServerMs-1) > 1e-9 || math.Abs(*a.TPOTRatio-(1+20.0/18)/2) > 1e-9 {
		t.Errorf("tpot %v %v", *a.TPOTMinusServerMs, *a.TPOTRatio)
	}
	if serverAgreement(reqs[2:]) != nil || serverAgreement([]metrics.Request{req(0.01, 0.02, 2, nil)}) != nil {
		t.Error("agreement without timings")
	}
	if staleRetries(reqs) != 1 {
		t.Errorf("stale retries %d", staleRetries(reqs))
	}
}
