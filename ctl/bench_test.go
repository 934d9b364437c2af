package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/units"
)

// fakeInference is a minimal OpenAI-compatible server: /v1/models and a
// streamed /v1/completions of max_tokens single-token chunks. It counts
// requests without the expected bearer token.
func fakeInference(t *testing.T, wantAuth bool, unauthorized *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantAuth && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ey") {
			unauthorized.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"missing token"}}`)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"served-model","max_model_len":2048,"runtime":"sim","simulated":true}]}`)
		case "/v1/completions":
			var b struct {
				MaxTokens int `json:"max_tokens"`
			}
			_ = json.NewDecoder(r.Body).Decode(&b)
			for i := range b.MaxTokens {
				fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t%d\"}]}\n\n", i)
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", b.MaxTokens)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeDaemon serves the control API's unit and info endpoints on a unix
// socket.
func fakeDaemon(t *testing.T, unit api.UnitDetail, runsDir string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ttisd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/units/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != unit.Name {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeNotFound, Message: "unit " + r.PathValue("name") + " not found"}})
			return
		}
		_ = json.NewEncoder(w).Encode(unit)
	})
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Info{RunsDir: runsDir})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}

func TestBenchUnitThroughDaemon(t *testing.T) {
	var unauthorized atomic.Int32
	inf := fakeInference(t, true, &unauthorized)
	secret := filepath.Join(t.TempDir(), "jwt")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	unit := api.UnitDetail{Unit: api.Unit{View: units.View{Name: "simu", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "sim",
		Listen: strings.TrimPrefix(inf.URL, "http://"), AuthMode: "jwt", AuthSecretFile: secret}, State: api.StateActive}}
	sock := fakeDaemon(t, unit, runs)

	// Flags after the unit are read too.
	out, code := runCtl(t, "--socket", sock, "bench", "simu", "--isl", "8", "--osl", "4", "--num-prompts", "3",
		"--no-server-tokenizer", "--num-warmups", "0", "--no-progress")
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, out)
	}
	if unauthorized.Load() != 0 {
		t.Errorf("%d requests without a minted token", unauthorized.Load())
	}
	if !strings.Contains(out, "Successful requests:                 3") || !strings.Contains(out, "(simulated server)") {
		t.Errorf("output:\n%s", out)
	}
	matches, _ := filepath.Glob(filepath.Join(runs, "simu", "*", "benchmarks", "benchmark_Llama-3.1-8B-Instruct_*_isl-8_osl-4_maxcon-1_n-3.json"))
	if len(matches) != 1 {
		t.Fatalf("result files %v under %s", matches, runs)
	}

	// The one point ran graded against nothing: the catalog has no target
	// at ISL 8 / OSL 4, so it is measured, not certified.
	if !strings.Contains(out, "Verdict: UNGRADED") || !strings.Contains(out, "no catalog target at this point") {
		t.Errorf("verdict of an ungraded point of a FUNCTIONAL model:\n%s", out)
	}
	out, code = runCtl(t, "--socket", sock, "bench", "--limit", "smoke", "--plan", "simu")
	if code != 0 || !strings.Contains(out, "89 / 21 / -") {
		t.Errorf("plan: exit %d\n%s", code, out)
	}
	if out, code := runCtl(t, "--socket", sock, "bench", "nope"); code != exitNoUnit || !strings.Contains(out, "not found") {
		t.Errorf("unknown unit: exit %d %s", code, out)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	var n atomic.Int32
	inf := fakeInference(t, false, &n)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "give a UNIT or --url"},
		{[]string{"bench", "--url", inf.URL, "x"}, "not both"},
		{[]string{"bench", "--url", inf.URL, "--endpoint", "embeddings"}, "--endpoint"},
		{[]string{"bench", "--url", inf.URL, "--request-rate", "-3"}, "--request-rate"},
		{[]string{"bench", "--url", inf.URL, "--goodput", "ttft"}, "--goodput"},
		{[]string{"bench", "--url", inf.URL, "--limit", "weekly"}, "--limit"},
		{[]string{"bench", "--url", inf.URL, "--dataset", "sharegpt"}, "--dataset-path"},
		{[]string{"bench", "--url", inf.URL, "--header", "novalue"}, "--header"},
		{[]string{"bench", "--url", inf.URL, "--no-such-flag"}, "no-such-flag"},
		{[]string{"bench", "--url", inf.URL, "--temperature", "-1"}, "--temperature"},
		{[]string{"bench", "--url", inf.URL, "--top-p", "0"}, "--top-p"},
		{[]string{"bench", "--url", inf.URL, "--top-k", "-2"}, "--top-k"},
		{[]string{"bench", "--url", inf.URL, "--min-p", "2"}, "--min-p"},
		{[]string{"bench", "--url", inf.URL, "--extra-body", "[1]"}, "--extra-body"},
		{[]string{"bench", "--url", inf.URL, "--extra-body", "null"}, "--extra-body"},
	} {
		out, code := runCtl(t, tc.args...)
		if code != exitUsage || !strings.Contains(out, tc.want) || !strings.HasPrefix(out, "ttisctl bench: ") {
			t.Errorf("%v: exit %d %q, want a usage error (2) naming %q", tc.args, code, out, tc.want)
		}
	}
}

// TestBenchDevCatalog: a dev unit's sweep is planned from the dev spec
// (Qwen3-8B on n150: 32768 tokens of context, 40960 in prod), as is a --url
// server's with --dev-mode; --dev-mode on a prod unit is refused.
func TestBenchDevCatalog(t *testing.T) {
	var n atomic.Int32
	inf := fakeInference(t, false, &n)
	longest := func(args ...string) int {
		t.Helper()
		stdout, stderr, code := runCtlStdout(t, append(args, "--plan", "--limit", "full", "-o", "json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		var pts []struct{ ISL, OSL int }
		if err := json.Unmarshal([]byte(stdout), &pts); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		m := 0
		for _, p := range pts {
			m = max(m, p.ISL+p.OSL)
		}
		return m
	}
	unit := api.UnitDetail{Unit: api.Unit{View: units.View{Name: "q", Model: "Qwen3-8B", Device: "n150", Runtime: "sim",
		Listen: strings.TrimPrefix(inf.URL, "http://"), AuthMode: "none", Catalog: "dev"}, State: api.StateActive}}
	dev := longest("--socket", fakeDaemon(t, unit, t.TempDir()), "bench", "q")
	unit.Catalog = ""
	prodSock := fakeDaemon(t, unit, t.TempDir())
	prod := longest("--socket", prodSock, "bench", "q")
	url := longest("bench", "--url", inf.URL, "--catalog-model", "Qwen3-8B", "--device", "n150", "--dev-mode", "--state-dir", t.TempDir())
	if dev > 32768 || dev == prod || url != dev {
		t.Errorf("longest sweep point: dev unit %d, prod unit %d, --url --dev-mode %d (dev context 32768)", dev, prod, url)
	}
	if out, code := runCtl(t, "--socket", prodSock, "bench", "q", "--dev-mode", "--plan"); code != exitUsage || !strings.Contains(out, "--dev-mode grades only --url servers") {
		t.Errorf("--dev-mode on a prod unit: exit %d\n%s", code, out)
	}
}

// TestBenchSamplingParams: without sampling flags every request asks for
// greedy decoding (temperature 0, as vLLM's benchmark does), so servers
// with different default samplers are measured alike; the flags and
// --extra-body reach every request, and the result records what was sent.
func TestBenchSamplingParams(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"served-model","max_model_len":2048}]}`)
		case "/v1/completions":
			var b map[string]any
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				t.Errorf("request body: %v", err)
			}
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	run := func(extra ...string) (sent []map[string]any, recorded map[string]any) {
		t.Helper()
		mu.Lock()
		bodies = nil
		mu.Unlock()
		args := append([]string{"bench", "--url", srv.URL, "--isl", "8", "--osl", "2", "--num-prompts", "2", "--no-server-tokenizer",
			"--num-warmups", "0", "--no-progress", "--state-dir", t.TempDir(), "-o", "json"}, extra...)
		out, errs, code := runCtlStdout(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		var res struct {
			Sampling map[string]any `json:"sampling_params"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("result: %v\n%s", err, out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 2 {
			t.Fatalf("%v: %d requests, want 2", extra, len(bodies))
		}
		return bodies, res.Sampling
	}
	sent, rec := run()
	for _, b := range sent {
		if v, ok := b["temperature"]; !ok || v != 0.0 {
			t.Errorf("default request temperature %v (sent: %v), want 0", v, ok)
		}
	}
	if rec["temperature"] != 0.0 || len(rec) != 1 {
		t.Errorf("recorded sampling %v, want temperature 0 alone", rec)
	}
	sent, rec = run("--temperature", "0.7", "--top-k", "40", "--extra-body", `{"cache_prompt": false, "temperature": 2}`)
	for _, b := range sent {
		if b["temperature"] != 0.7 || b["top_k"] != 40.0 || b["cache_prompt"] != false {
			t.Errorf("request %v: want temperature 0.7 (the flag wins over --extra-body), top_k 40, cache_prompt false", b)
		}
	}
	if rec["temperature"] != 0.7 || rec["top_k"] != 40.0 || rec["cache_prompt"] != false {
		t.Errorf("recorded sampling %v", rec)
	}
}

// A run is labelled with what it measured: one benchmark point is a
// "point" (no sweep, not smoke), an eval given a count is that count (not
// full); modes keep their names.
func TestRunSizeLabels(t *testing.T) {
	srv, evalSrv := fakeInference(t, false, nil), zeroServer(t)
	state := t.TempDir()
	for _, args := range [][]string{
		{"bench", "--url", srv.URL, "--isl", "8", "--osl", "2", "--num-prompts", "2", "--num-warmups", "0", "--no-server-tokenizer"},
		{"bench", "--url", srv.URL, "--limit", "smoke", "--num-prompts", "1", "--num-warmups", "0", "--no-server-tokenizer"},
		{"eval", "--url", evalSrv.URL, "--task", "ttis_arith", "--limit", "2"},
	} {
		if out, code := runCtl(t, append(args, "--state-dir", state, "--no-progress")...); code != 0 {
			t.Fatalf("ttisctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	out, _, code := runCtlStdout(t, "runs", "--state-dir", state, "-o", "json")
	var list []struct{ Workflow, Limit string }
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("runs: exit %d %v\n%s", code, err, out)
	}
	got := map[string]int{}
	for _, m := range list {
		got[m.Workflow+" "+m.Limit]++
	}
	want := map[string]int{"benchmarks point": 1, "benchmarks smoke": 1, "evals 2": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// vllm bench serve's flag names work as they do there: --random-input-len,
// --random-output-len and --dataset-name name the point, --save-result
// with --result-dir copies its result JSON out; --ignore-eos is off by
// default for one point, as there, on for a sweep (targets assume fixed
// output lengths), and the result records what was sent.
func TestBenchVllmFlags(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"served-model","max_model_len":2048}]}`)
		case "/v1/completions":
			var b map[string]any
			_ = json.NewDecoder(r.Body).Decode(&b)
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	sent := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		out := bodies
		bodies = nil
		return out
	}
	state, resultDir := t.TempDir(), filepath.Join(t.TempDir(), "results")
	common := []string{"bench", "--url", srv.URL, "--num-prompts", "2", "--no-server-tokenizer", "--num-warmups", "0", "--no-progress", "--state-dir", state}
	out, code := runCtl(t, append(common, "--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "3", "--save-result", "--result-dir", resultDir)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, b := range sent() {
		if b["max_tokens"] != 3.0 || b["ignore_eos"] != nil {
			t.Errorf("one point: request %v, want max_tokens 3 and no ignore_eos", b)
		}
	}
	files, _ := filepath.Glob(filepath.Join(resultDir, "*.json"))
	if len(files) != 1 || !strings.Contains(out, "saved "+files[0]) {
		t.Fatalf("--save-result --result-dir: %v\n%s", files, out)
	}
	var res struct {
		IgnoreEOS bool `json:"ignore_eos"`
		Completed int  `json:"completed"`
	}
	if b, err := os.ReadFile(files[0]); err != nil || json.Unmarshal(b, &res) != nil || res.IgnoreEOS || res.Completed != 2 {
		t.Errorf("saved result %+v (%v): want ignore_eos false, 2 completed", res, err)
	}
	if _, code := runCtl(t, append(common, "--isl", "8", "--osl", "3", "--ignore-eos")...); code != 0 {
		t.Fatalf("--ignore-eos: exit %d", code)
	}
	for _, b := range sent() {
		if b["ignore_eos"] != true {
			t.Errorf("--ignore-eos: request %v", b)
		}
	}
	// A sweep sends it by default, and not when told not to.
	for flag, want := range map[string]any{"": true, "--ignore-eos=false": nil} {
		args := append(common, "--limit", "smoke", "--num-prompts", "1")
		if flag != "" {
			args = append(args, flag)
		}
		if out, code := runCtl(t, args...); code != 0 {
			t.Fatalf("sweep %s: exit %d\n%s", flag, code, out)
		}
		for _, b := range sent() {
			if b["ignore_eos"] != want {
				t.Errorf("sweep %q: request ignore_eos %v, want %v", flag, b["ignore_eos"], want)
			}
		}
	}
}
