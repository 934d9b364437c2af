package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// The sim's timing for Llama-3.1-8B-Instruct on n150 (catalog targets,
// read under the template's first weight Llama-3.1-8B as run.py reads them:
// ttft 89 ms at ISL 128, tput_user 21): prefill takes 89 ms × ISL/128 and a
// decode step 1000/21 ms, both times the unit's time_scale.
const (
	simTTFTms     = 89.0
	simTargetISL  = 128
	simTputUser   = 21.0
	simModel      = "Llama-3.1-8B-Instruct"
	simDevice     = "n150"
	serverTimeout = 60 * time.Second
)

// binaries are ttisd and ttisctl built for this test run.
func binaries(tb testing.TB) (ttisd, ttisctl string) {
	tb.Helper()
	return testbin.Path(tb, "ttisd", false), testbin.Path(tb, "ttisctl", false)
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// errRuntimeMissing is returned when ttisd serve lacks the unit's runtime.
var errRuntimeMissing = errors.New("runtime not available in ttisd serve")

// startServe runs `ttisd serve` on a unit file ("LISTEN" stands for its
// address) and returns the server's root once /health answers 200.
func startServe(tb testing.TB, unitBody string) (string, error) {
	tb.Helper()
	s, err := testbin.TryServe(tb, unitBody)
	if err != nil {
		if strings.Contains(err.Error(), "not available") {
			return "", fmt.Errorf("%w: %v", errRuntimeMissing, err)
		}
		return "", err
	}
	return s.URL, nil
}

func simUnit(timeScale float64) string {
	return fmt.Sprintf("model = %q\ndevice = %q\nruntime = \"sim\"\nlisten = \"LISTEN\"\n\n[sim]\ntime_scale = %g\nseed = 7\n", simModel, simDevice, timeScale)
}

// simPoint runs one point against a sim server.
func simPoint(ctx context.Context, base string, isl, osl, conc, n int) (*bench.PointResult, error) {
	return bench.RunPoint(ctx, bench.PointConfig{
		Client:          client.Config{BaseURL: base, API: openai.Completions, Model: simModel, IgnoreEOS: true, ContinuousUsage: true, RequestTimeout: time.Minute},
		Dataset:         bench.DatasetConfig{Name: "random", InputLen: isl, OutputLen: osl},
		NumPrompts:      n,
		Load:            loadgen.Options{MaxConcurrency: conc, NumWarmups: 1, Seed: 1},
		Percentiles:     []float64{50, 99},
		ServerTokenizer: true,
	})
}

// TestSimTimingMatches checks that the client measures the sim's injected
// TTFT and TPOT. Bounds are generous because the machine is shared; the
// precise figures come from BenchmarkSimTiming.
func TestSimTimingMatches(t *testing.T) {
	const scale = 0.5
	base, err := startServe(t, simUnit(scale))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const isl, osl = 128, 24
	pr, err := simPoint(ctx, base, isl, osl, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	s := pr.Summary
	if s.Completed != 4 || s.Failed != 0 || s.TotalInputTokens != 4*isl || s.TotalOutputTokens != 4*osl {
		t.Fatalf("summary %+v", s)
	}
	wantTTFT := simTTFTms * isl / simTargetISL * scale
	wantTPOT := 1000 / simTputUser * scale
	t.Logf("TTFT %.3f ms (injected %.3f), TPOT %.3f ms (injected %.3f)", s.TTFT.Mean, wantTTFT, s.TPOT.Mean, wantTPOT)
	if s.TTFT.Mean < wantTTFT-1 || s.TTFT.Mean > wantTTFT+25 {
		t.Errorf("mean TTFT %.3f ms, injected %.3f ms", s.TTFT.Mean, wantTTFT)
	}
	if s.TPOT.Mean < wantTPOT-0.5 || s.TPOT.Mean > wantTPOT+10 {
		t.Errorf("mean TPOT %.3f ms, injected %.3f ms", s.TPOT.Mean, wantTPOT)
	}
	var raw map[string]any
	if err := json.Unmarshal(pr.JSON, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mean_ttft_ms", "p99_tpot_ms", "median_itl_ms", "mean_e2el_ms", "request_throughput", "output_throughput", "total_token_throughput", "requests", "itls", "ttfts"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	if raw["simulated"] != false {
		// RunPoint alone does not know; the CLI sets it from /v1/models.
		t.Errorf("simulated = %v", raw["simulated"])
	}
	if src := raw["output_tokens_source"].(map[string]any); src["usage"] != 4.0 {
		t.Errorf("output tokens source %v", src)
	}
}

// TestSimChatExactISL: on the chat endpoint the ISL includes the server's
// chat template, so the server's usage reports exactly ISL prompt tokens.
func TestSimChatExactISL(t *testing.T) {
	base, err := startServe(t, simUnit(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, err := bench.RunPoint(ctx, bench.PointConfig{
		Client:          client.Config{BaseURL: base, API: openai.Chat, Model: simModel, IgnoreEOS: true},
		Dataset:         bench.DatasetConfig{Name: "random", InputLen: 64, OutputLen: 8},
		NumPrompts:      3,
		Load:            loadgen.Options{MaxConcurrency: 2},
		ServerTokenizer: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := pr.Summary
	if s.Failed != 0 || s.TotalInputTokens != 3*64 || s.TotalOutputTokens != 3*8 {
		t.Errorf("failed %d, input %d (want 192), output %d (want 24): %v", s.Failed, s.TotalInputTokens, s.TotalOutputTokens, pr.Run.Warnings)
	}
	if !strings.Contains(pr.Run.Tokenizer, "chat template included") {
		t.Errorf("tokenizer %q", pr.Run.Tokenizer)
	}
}

// TestSimBadInput: a wrong model name and a dead server are counted as
// failed requests with reasons, not crashes.
func TestSimBadInput(t *testing.T) {
	base, err := startServe(t, simUnit(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, err := bench.RunPoint(ctx, bench.PointConfig{
		Client:     client.Config{BaseURL: base, Model: "no-such-model", IgnoreEOS: true},
		Dataset:    bench.DatasetConfig{Name: "random", InputLen: 16, OutputLen: 4},
		NumPrompts: 3,
		Load:       loadgen.Options{MaxConcurrency: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Summary.Failed != 3 || !strings.Contains(pr.Run.Requests[0].Error, "HTTP 404") {
		t.Errorf("failed %d, first error %q", pr.Summary.Failed, pr.Run.Requests[0].Error)
	}
}

// runCtl runs ttisctl and returns its output and exit code.
func runCtl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	_, ctl := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctl, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// sweepDir is the benchmarks folder of the one run in the state folder's
// store.
func sweepDir(t *testing.T, state string) string {
	t.Helper()
	store := &runs.Store{Root: filepath.Join(state, "runs")}
	list, errs := store.List(context.Background(), "")
	if len(errs) > 0 || len(list) != 1 {
		t.Fatalf("runs in %s: %v %v", state, list, errs)
	}
	return filepath.Join(store.Dir(list[0]), "benchmarks")
}

func checkSweepFiles(t *testing.T, state string, wantInMarkdown ...string) {
	t.Helper()
	dir := sweepDir(t, state)
	md, err := os.ReadFile(filepath.Join(dir, bench.SummaryMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wantInMarkdown {
		if !strings.Contains(string(md), w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, bench.SummaryCSV))
	if err != nil || !strings.HasPrefix(string(csv), "isl,osl,concurrency") {
		t.Errorf("csv %q %v", csv, err)
	}
	var rep struct {
		Points []struct {
			Grade struct{ Status string } `json:"grade"`
		} `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(dir, bench.SummaryJSON))
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Points) == 0 || rep.Points[0].Grade.Status == "" {
		t.Errorf("report json %s %v", b, err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "benchmark_*_isl-*_osl-*_maxcon-*_n-*.json"))
	if len(matches) != len(rep.Points) {
		t.Errorf("%d raw result files for %d points", len(matches), len(rep.Points))
	}
}

func TestSmokeSweepSim(t *testing.T) {
	base, err := startServe(t, simUnit(0))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	out, code := runCtl(t, "bench", "--url", base, "--device", simDevice, "--limit", "smoke", "--state-dir", state, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "Verdict: PASS") || !strings.Contains(out, "point 1/1 isl 128 osl 128 concurrency 1") {
		t.Errorf("output:\n%s", out)
	}
	checkSweepFiles(t, state, "Simulated", "Targets — ISL 128 / OSL 128, concurrency 1", "PASS: ", "| 128 | 128 | 1 | 8 |")
}

func TestSmokeSweepCPU(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := synth.Create(model, synth.Options{Preset: "tiny"}); err != nil {
		t.Fatal(err)
	}
	unit := fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\nlisten = \"LISTEN\"\n", model)
	base, err := startServe(t, unit)
	if errors.Is(err, errRuntimeMissing) {
		t.Skipf("cpu runtime is not wired into ttisd serve yet: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	out, code := runCtl(t, "bench", "--url", base, "--limit", "smoke", "--state-dir", state, "--no-progress")
	if code != 0 || !strings.Contains(out, "Verdict: UNGRADED") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// No catalog entry for a GGUF file: one ISL 16 / OSL 4 point, ungraded.
	checkSweepFiles(t, state, "| 16 | 4 | 1 | 8 |", "NA: no target")
}

// TestSweepServerDown: every point fails, the files still appear and the
// exit status says the run is incomplete.
func TestSweepServerDown(t *testing.T) {
	state := t.TempDir()
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	// Not waited for (--wait-ready 0): the sweep runs and finds it down.
	out, code := runCtl(t, "bench", "--url", url, "--model", simModel, "--device", simDevice, "--limit", "smoke", "--state-dir", state, "--no-progress", "--wait-ready", "0")
	if code != 5 || !strings.Contains(out, "Verdict: INCOMPLETE") {
		t.Fatalf("exit %d, want 5 (incomplete):\n%s", code, out)
	}
	checkSweepFilesNoRaw(t, state)
}

func checkSweepFilesNoRaw(t *testing.T, state string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(sweepDir(t, state), bench.SummaryMarkdown))
	if err != nil || !strings.Contains(string(md), "did not run") || !strings.Contains(string(md), "NOT MEASURED") {
		t.Errorf("markdown %s %v", md, err)
	}
}

// serverHist scrapes /metrics and returns a histogram's sum and count over
// all label sets.
func serverHist(tb testing.TB, base, name string) (sum, count float64) {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		var dst *float64
		switch {
		case strings.HasPrefix(line, name+"_sum"):
			dst = &sum
		case strings.HasPrefix(line, name+"_count"):
			dst = &count
		default:
			continue
		}
		f := strings.Fields(line)
		var v float64
		if _, err := fmt.Sscan(f[len(f)-1], &v); err != nil {
			tb.Fatalf("metrics line %q: %v", line, err)
		}
		*dst += v
	}
	return sum, count
}

// BenchmarkSimTiming measures how far the client's TTFT and TPOT land from
// the sim's injected values (time_scale 1, ISL 128, OSL 64, concurrency 1),
// and from the server's own view of the same requests (its
// time_to_first_token and inter_token_latency histograms). The second pair
// isolates the client's measurement error from the server's timer overshoot.
func BenchmarkSimTiming(b *testing.B) {
	base, err := startServe(b, simUnit(1))
	if err != nil {
		b.Fatal(err)
	}
	wantTTFT, wantTPOT := simTTFTms, 1000/simTputUser
	var ttftErr, tpotErr, ttftSrv, tpotSrv []float64
	for range b.N {
		ts0, tc0 := serverHist(b, base, "vllm:time_to_first_token_seconds")
		is0, ic0 := serverHist(b, base, "vllm:inter_token_latency_seconds")
		pr, err := bench.RunPoint(context.Background(), bench.PointConfig{
			Client:     client.Config{BaseURL: base, Model: simModel, IgnoreEOS: true, RequestTimeout: time.Minute},
			Dataset:    bench.DatasetConfig{Name: "random", InputLen: 128, OutputLen: 64},
			NumPrompts: 4, Load: loadgen.Options{MaxConcurrency: 1}, ServerTokenizer: true,
		})
		if err != nil || pr.Summary.Failed > 0 {
			b.Fatalf("%v %+v", err, pr)
		}
		ts1, tc1 := serverHist(b, base, "vllm:time_to_first_token_seconds")
		is1, ic1 := serverHist(b, base, "vllm:inter_token_latency_seconds")
		s := pr.Summary
		ttftErr = append(ttftErr, s.TTFT.Mean-wantTTFT)
		tpotErr = append(tpotErr, s.TPOT.Mean-wantTPOT)
		ttftSrv = append(ttftSrv, s.TTFT.Mean-(ts1-ts0)/(tc1-tc0)*1000)
		tpotSrv = append(tpotSrv, s.TPOT.Mean-(is1-is0)/(ic1-ic0)*1000)
	}
	b.ReportMetric(median(ttftErr), "ttft-vs-injected-ms")
	b.ReportMetric(median(tpotErr), "tpot-vs-injected-ms")
	b.ReportMetric(median(ttftSrv), "ttft-vs-server-ms")
	b.ReportMetric(median(tpotSrv), "tpot-vs-server-ms")
}

// BenchmarkClientThroughput streams from a zero-latency sim and reports the
// tokens per second the client takes in (run with -cpu 1 to pin the client
// to one core; the server is a separate process) and the measured TPOT.
func BenchmarkClientThroughput(b *testing.B) {
	base, err := startServe(b, simUnit(0))
	if err != nil {
		b.Fatal(err)
	}
	var tps, tpot []float64
	for range b.N {
		pr, err := simPoint(context.Background(), base, 16, 1024, 8, 64)
		if err != nil || pr.Summary.Failed > 0 {
			b.Fatalf("%v", err)
		}
		tps = append(tps, pr.Summary.OutputThroughput)
		tpot = append(tpot, pr.Summary.TPOT.Mean)
	}
	b.ReportMetric(median(tps), "tokens/s")
	b.ReportMetric(median(tpot)*1000, "tpot-µs")
}

// BenchmarkClientSustained paces the sim at a 0.5 ms decode step with 32
// streams (64k tokens/s from the server) and reports the measured TPOT
// against the injected one: with -cpu 1 it shows whether a one-core client
// keeps up without its TPOT drifting upwards.
func BenchmarkClientSustained(b *testing.B) {
	const step = 0.5 // ms
	scale := step / (1000 / simTputUser)
	base, err := startServe(b, simUnit(scale))
	if err != nil {
		b.Fatal(err)
	}
	var tps, drift []float64
	for range b.N {
		pr, err := simPoint(context.Background(), base, 16, 512, 32, 64)
		if err != nil || pr.Summary.Failed > 0 {
			b.Fatalf("%v", err)
		}
		tps = append(tps, pr.Summary.OutputThroughput)
		drift = append(drift, pr.Summary.TPOT.Mean/step)
	}
	b.ReportMetric(median(tps), "tokens/s")
	b.ReportMetric(median(drift), "tpot/injected")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
