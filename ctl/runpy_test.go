package ctl

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/units"
)

// runPyJWT is the bearer run.py mints from JWT_SECRET "ttis-test-secret":
// PyJWT 2.6.0 (Debian's python3-jwt),
// jwt.encode(json.loads('{"team_id": "tenstorrent", "token_id":"debug-test"}'), "ttis-test-secret", algorithm="HS256").
// vLLM compares it byte for byte (its API key), so ttis must mint the same.
const runPyJWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0ZWFtX2lkIjoidGVuc3RvcnJlbnQiLCJ0b2tlbl9pZCI6ImRlYnVnLXRlc3QifQ.1Yj5cYZMIFq5oYnxY7N4_x_tDzBMtHJMgiIyifoci4k"

// bearerServer is fakeInference that records the bearers it was sent.
func bearerServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	inner := fakeInference(t, false, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		mu.Unlock()
		u, _ := url.Parse(inner.URL)
		r.URL.Scheme, r.URL.Host, r.RequestURI = u.Scheme, u.Host, ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

var benchPoint = []string{"bench", "--isl", "8", "--osl", "4", "--num-prompts", "1", "--num-warmups", "0", "--no-server-tokenizer", "--no-progress"}

func TestJWTSecretMintsRunPysToken(t *testing.T) {
	if out, err := exec.Command("/usr/bin/python3", "-c",
		`import jwt, json; print(jwt.encode(json.loads('{"team_id": "tenstorrent", "token_id":"debug-test"}'), "ttis-test-secret", algorithm="HS256"))`).Output(); err == nil {
		if got := strings.TrimSpace(string(out)); got != runPyJWT {
			t.Errorf("PyJWT mints %s here, the recorded token is %s", got, runPyJWT)
		}
	} else {
		t.Logf("PyJWT not importable by /usr/bin/python3 (apt-get install python3-jwt): checking against the recorded token only (%v)", err)
	}
	srv, seen := bearerServer(t)
	t.Setenv("JWT_SECRET", "ttis-test-secret")
	t.Setenv("OPENAI_API_KEY", "literal-key") // run.py: a secret wins over a literal key
	out, code := runCtl(t, append(benchPoint, "--url", srv.URL, "--state-dir", t.TempDir())...)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, out)
	}
	for _, b := range seen() {
		if b != runPyJWT {
			t.Fatalf("sent bearer %q, want run.py's %q", b, runPyJWT)
		}
	}
	// The flag beats its variable; a key given on the command line beats
	// the secret from the environment.
	for _, tc := range []struct {
		args []string
		want func(string) bool
	}{
		{[]string{"--jwt-secret", "another-secret"}, func(b string) bool { return strings.HasPrefix(b, "ey") && b != runPyJWT }},
		{[]string{"--api-key", "explicit-key"}, func(b string) bool { return b == "explicit-key" }},
	} {
		srv, seen := bearerServer(t)
		if out, code := runCtl(t, append(append(benchPoint, "--url", srv.URL, "--state-dir", t.TempDir()), tc.args...)...); code != 0 {
			t.Fatalf("bench %v: exit %d\n%s", tc.args, code, out)
		}
		if b := seen(); len(b) == 0 || !tc.want(b[0]) {
			t.Errorf("bench %v sent %q", tc.args, b)
		}
	}
	for _, bad := range [][]string{
		{"--url", srv.URL, "--jwt-secret", "s", "--api-key", "k"},
		{"simu", "--jwt-secret", "s"},
	} {
		if out, code := runCtl(t, append(benchPoint, bad...)...); code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d\n%s", bad, code, exitUsage, out)
		}
	}
}

func TestServicePortTargetsThisHost(t *testing.T) {
	srv, seen := bearerServer(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	t.Setenv("SERVICE_PORT", port)
	out, code := runCtl(t, append(benchPoint, "--state-dir", t.TempDir())...)
	if code != 0 || len(seen()) == 0 || !strings.Contains(out, "Successful requests:                 1") {
		t.Fatalf("bench with SERVICE_PORT=%s: exit %d, %d requests\n%s", port, code, len(seen()), out)
	}
	for _, bad := range [][]string{
		{"--service-port", "1", "--url", srv.URL},
		{"--service-port", "0"},
		{"--service-port", "70000"},
	} {
		if out, code := runCtl(t, append(benchPoint, bad...)...); code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d\n%s", bad, code, exitUsage, out)
		}
	}
	// With --url, SERVICE_PORT from the environment is not used.
	if out, code := runCtl(t, append(benchPoint, "--url", srv.URL, "--state-dir", t.TempDir())...); code != 0 {
		t.Errorf("bench --url with SERVICE_PORT set: exit %d\n%s", code, out)
	}
}

func TestWaitReadyBoundsTheWait(t *testing.T) {
	loading := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"loading the model"}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(loading.Close)
	out, code := runCtl(t, append(benchPoint, "--url", loading.URL, "--state-dir", t.TempDir(), "--wait-ready", "1s")...)
	if code != exitError || !strings.Contains(out, "was not ready after") || !strings.Contains(out, "loading the model") ||
		!strings.Contains(out, "raise --wait-ready") {
		t.Errorf("bench against a server that stays loading: exit %d\n%s", code, out)
	}
	if out, code := runCtl(t, append(benchPoint, "--url", loading.URL, "--state-dir", t.TempDir(), "--wait-ready", "-1s")...); code != exitUsage {
		t.Errorf("negative --wait-ready: exit %d\n%s", code, out)
	}

	// A unit ttisd is still starting is waited for, up to the bound.
	unit := api.UnitDetail{Unit: api.Unit{View: units.View{Name: "warming", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "vllm",
		Listen: strings.TrimPrefix(loading.URL, "http://")}, State: api.StateActivating, SubState: api.SubStart}}
	sock := fakeDaemon(t, unit, t.TempDir())
	out, code = runCtl(t, append(benchPoint, "--socket", sock, "warming", "--wait-ready", "1s")...)
	if code != exitError || !strings.Contains(out, "waiting for unit warming to be active: activating (start)") ||
		!strings.Contains(out, "unit warming is still activating (start) after 1s") {
		t.Errorf("bench of an activating unit: exit %d\n%s", code, out)
	}
	out, code = runCtl(t, append(benchPoint, "--socket", sock, "warming", "--wait-ready", "0")...)
	if code != exitError || !strings.Contains(out, "not active") {
		t.Errorf("bench of an activating unit without waiting: exit %d\n%s", code, out)
	}
}

// HF_TOKEN (run.py's) reaches the Hub client; a token file wins over it.
func TestHFTokenFromTheEnvironment(t *testing.T) {
	fake := hubtest.New(t)
	repo := "meta-llama/Llama-3.1-8B-Instruct"
	fake.SetBranch("model", repo, "main", []hubtest.File{{Path: "config.json", Content: []byte(`{"model_type":"llama"}`)}})
	fake.Gate("model", repo, "hf_llama")
	state := t.TempDir()
	t.Setenv("HF_TOKEN", "hf_llama")
	if out, code := runCtl(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct"}, hubArgs(fake, state)...)...); code != 0 {
		t.Fatalf("pull with HF_TOKEN: exit %d\n%s", code, out)
	}
	wrong := filepath.Join(state, "wrong_token")
	if err := os.WriteFile(wrong, []byte("hf_wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct", "--hf-token-file", wrong, "--hub-cache", t.TempDir()}, hubArgs(fake, state)...)...)
	if code != exitError || !strings.Contains(out, "gated") {
		t.Errorf("a token file beside HF_TOKEN: exit %d, want the file's (wrong) token refused\n%s", code, out)
	}
	if strings.Contains(out, "hf_llama") || strings.Contains(out, "hf_wrong") {
		t.Error("a token was printed")
	}
}

// ONLY_BENCHMARK_TARGETS and OVERRIDE_BENCHMARK_TARGETS shape the sweep as
// in run.py; the flags beat them.
func TestBenchmarkTargetVariables(t *testing.T) {
	srv := fakeInference(t, false, nil)
	plan := func(args ...string) string {
		t.Helper()
		out, code := runCtl(t, append([]string{"bench", "--url", srv.URL, "--device", "n150", "--catalog-model", "Llama-3.1-8B-Instruct",
			"--limit", "ci-nightly", "--plan", "--state-dir", t.TempDir()}, args...)...)
		if code != 0 {
			t.Fatalf("plan %v: exit %d\n%s", args, code, out)
		}
		return out
	}
	if out := plan(); !strings.Contains(out, "points:") || strings.Contains(out, ", 1 points:") {
		t.Fatalf("nightly sweep:\n%s", out)
	}
	t.Setenv("ONLY_BENCHMARK_TARGETS", "1")
	if out := plan(); !strings.Contains(out, ", 1 points:") {
		t.Errorf("ONLY_BENCHMARK_TARGETS=1:\n%s", out)
	}
	if out := plan("--targets-only=false"); strings.Contains(out, ", 1 points:") {
		t.Errorf("--targets-only=false beside ONLY_BENCHMARK_TARGETS=1:\n%s", out)
	}
	// Seed 003's override file: keyed by the template's first weight, its
	// num_prompts kept (3, where the rule says 8).
	file := filepath.Join(t.TempDir(), "override.json")
	if err := os.WriteFile(file, []byte(`{"Llama-3.1-8B": {"n150": [{"isl": 128, "osl": 128, "max_concurrency": 1, "num_prompts": 3,
	  "targets": {"theoretical": {"ttft_ms": 77, "tput_user": 30}}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OVERRIDE_BENCHMARK_TARGETS", file)
	if out := plan(); !strings.Contains(out, "1  128  128  1            3        target  77 / 30 / -") {
		t.Errorf("OVERRIDE_BENCHMARK_TARGETS:\n%s", out)
	}
	t.Setenv("ONLY_BENCHMARK_TARGETS", "yes")
	if out, code := runCtl(t, "bench", "--url", srv.URL, "--plan", "--state-dir", t.TempDir()); code != exitUsage || !strings.Contains(out, "ONLY_BENCHMARK_TARGETS") {
		t.Errorf("ONLY_BENCHMARK_TARGETS=yes: exit %d\n%s", code, out)
	}
}

// report --rebuild writes a run's reports again from its raw files.
func TestReportRebuild(t *testing.T) {
	srv := fakeInference(t, false, nil)
	state := t.TempDir()
	if out, code := runCtl(t, append(benchPoint, "--url", srv.URL, "--state-dir", state)...); code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "runs", "*", "*-benchmarks-*"))
	if len(dirs) != 1 {
		t.Fatalf("run folders %v", dirs)
	}
	report := filepath.Join(dirs[0], "report.json")
	if err := os.WriteFile(report, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, "report", filepath.Base(dirs[0]), "--rebuild", "--format", "json", "--state-dir", state)
	if code != 0 || !strings.Contains(out, `"verdict": "UNGRADED"`) || !strings.Contains(out, `"isl": 8`) || !strings.Contains(out, `"unit": "url-served-model"`) {
		t.Errorf("report --rebuild: exit %d\n%s", code, out)
	}
	if out, code := runCtl(t, "report", "no-such-run", "--rebuild", "--state-dir", state); code != exitNoUnit {
		t.Errorf("report --rebuild of an unknown run: exit %d\n%s", code, out)
	}
}
