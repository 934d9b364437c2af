package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
)

// zeroServer answers every question with "#### 0" (always wrong for the
// generated problems, which never have answer 0) so that scores are known.
func zeroServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"served-model"}]}`)
			return
		}
		fmt.Fprint(w, `{"choices":[{"text":" #### 0"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEvalURL(t *testing.T) {
	srv := zeroServer(t)
	state := t.TempDir()
	out, code := runCtl(t, "eval", "--url", srv.URL, "--task", "ttis_arith", "--limit", "4", "--state-dir", state, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "| ttis_arith | exact_match | strict-match | 0.0000 |") || !strings.Contains(out, "Accuracy evaluation: served-model") {
		t.Errorf("summary:\n%s", out)
	}
	// A model the catalog does not know is graded against nothing.
	if !strings.Contains(out, "Verdict: UNGRADED") {
		t.Errorf("verdict:\n%s", out)
	}
	matches, _ := filepath.Glob(filepath.Join(state, "runs", "url-served-model", "*-evals-*", "evals", "eval_*", "*", "results_*.json"))
	if len(matches) != 1 {
		t.Errorf("results files %v", matches)
	}
	if out, code := runCtl(t, "eval", "--task", "ttis_arith"); code != exitUsage || !strings.Contains(out, "give a UNIT or --url") {
		t.Errorf("no target: exit %d, want 2: %s", code, out)
	}
	// A task that cannot run is reported as not measured, and the run is
	// incomplete.
	if out, code := runCtl(t, "eval", "--url", srv.URL, "--task", "gsm8k", "--no-progress", "--state-dir", state); code != exitIncomplete || !strings.Contains(out, "not measured") || !strings.Contains(out, "dataset") {
		t.Errorf("gsm8k without a dataset: exit %d %s", code, out)
	}
	if out, code := runCtl(t, "eval", "--list-tasks"); code != 0 || !strings.Contains(out, "ttis_arith_mc_generative") {
		t.Errorf("list: %d %s", code, out)
	}
	out, _, code = runCtlStdout(t, "eval", "--list-tasks", "-o", "json")
	var list []tasks.Info
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) == 0 {
		t.Errorf("list -o json: %d %s", code, out)
	}
	// The coverage an operator reads before a release.
	for _, ti := range list {
		switch ti.Name {
		case "ifeval", "leaderboard_ifeval", "meta_ifeval":
			if ti.Coverage.Reproduces != tasks.ReproducesFull || len(ti.Coverage.Assets) != 2 || ti.Coverage.Checked != tasks.CheckedReferenceCode {
				t.Errorf("%s coverage %+v", ti.Name, ti.Coverage)
			}
		case "ruler":
			if ti.Coverage.Reproduces != tasks.ReproducesNone {
				t.Errorf("ruler coverage %+v", ti.Coverage)
			}
		}
	}
	// The image and video tasks are runnable, and name the files the
	// operator supplies (file, digest, where it is published).
	for _, name := range []string{"load_image", "load_video"} {
		i := slices.IndexFunc(list, func(x tasks.Info) bool { return x.Name == name })
		if i < 0 || list[i].NotRunnable != "" || len(list[i].Variants) == 0 {
			t.Errorf("%s listed as %+v", name, list)
			continue
		}
		if !strings.Contains(out, "captions_source.tsv") || !strings.Contains(out, "2eeb95637b30fe5af26dd644bafa7affe4e5472ad0bda32d0feb1bd261280d5e") {
			t.Errorf("%s does not name its assets", name)
		}
	}
}

func TestEvalErroredSamplesAreIncomplete(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"text":""}]}`) // empty answers are reported, not scored silently
	}))
	defer srv.Close()
	out, code := runCtl(t, "eval", "--url", srv.URL, "--model", "m", "--task", "ttis_arith", "--limit", "2", "--no-progress", "--state-dir", t.TempDir())
	if code != exitIncomplete || !strings.Contains(out, "empty_response: 2") || !strings.Contains(out, "Verdict: INCOMPLETE") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestEvalUnitThroughDaemon starts a real ttisd with a sim unit and runs
// `ttisctl eval UNIT`, which must find the unit's server through the
// control socket and write into the daemon's results store.
func TestEvalUnitThroughDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts ttisd; TestEvalURL covers the command")
	}
	dir := t.TempDir()
	bin := testbin.Path(t, "ttisd", false)
	units := filepath.Join(dir, "units")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	unit := fmt.Sprintf("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = %q\n[sim]\ntime_scale = 0.0\n", addr)
	if err := os.WriteFile(filepath.Join(units, "evsim.toml"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	state := filepath.Join(dir, "state")
	logPath := filepath.Join(dir, "ttisd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	cmd := exec.Command(bin, "--units-dir", units, "--state-dir", state, "--socket", sock, "--socket-group", "",
		"--device-root", filepath.Join(dir, "dev"), "--log-format", "json")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	dc := daemonclient.New(sock)
	deadline := time.Now().Add(60 * time.Second)
	for {
		u, err := dc.Unit(context.Background(), "evsim", 0)
		if err == nil && u.State == api.StateActive {
			break
		}
		if err == nil && u.LoadState == "error" {
			t.Fatalf("unit file rejected: %s", u.LoadError)
		}
		if time.Now().After(deadline) {
			t.Skipf("sim unit not active within 60s (%+v, %v); daemon log:\n%s", u, err, logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The unit's model has catalog references that this run does not
	// select, so it cannot certify the model: INCOMPLETE, exit 5.
	out, code := runCtl(t, "--socket", sock, "eval", "evsim", "--task", "ttis_arith_mc", "--limit", "3", "--no-progress")
	if code != exitIncomplete || !strings.Contains(out, "not selected (--task") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	matches, _ := filepath.Glob(filepath.Join(state, "runs", "evsim", "*-evals-*", "evals", "eval_*", "*", "results_*.json"))
	if len(matches) != 1 {
		t.Fatalf("results in the store: %v\n%s", matches, out)
	}
	// A unit on a catalog model is graded against that model's references
	// (none exist for this built-in task, so NA).
	if !strings.Contains(out, "| ttis_arith_mc |") || !strings.Contains(out, "NA") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestEvalJSONOutput(t *testing.T) {
	srv := zeroServer(t)
	out, _, code := runCtlStdout(t, "--output", "json", "eval", "--url", srv.URL, "--task", "ttis_arith_mc_generative", "--api", "completions",
		"--limit", "0.01", "--size", "100", "--no-progress", "--state-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var doc struct {
		Verdict  string `json:"verdict"`
		Sections []struct {
			Kind string `json:"kind"`
			Data []struct {
				Task    string `json:"task_name"`
				Role    string `json:"role"`
				Samples int    `json:"n_samples"`
			} `json:"data"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if doc.Verdict != "UNGRADED" || len(doc.Sections) != 1 || len(doc.Sections[0].Data) != 1 {
		t.Fatalf("report %+v", doc)
	}
	if row := doc.Sections[0].Data[0]; row.Task != "ttis_arith_mc_generative" || row.Role != "smoke" || row.Samples != 1 {
		t.Errorf("row %+v", row)
	}
}

// An eval on a host that cannot reach the Hub says so once on the
// terminal (the log on stderr, the verdict on stdout): the endpoint and
// the network's error, each reference task with its own data, and one
// command that fetches them all.
func TestEvalWithoutTheHubSaysItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	url := testbin.Serve(t, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	stdout, stderr, code := runCtlStdout(t, "eval", "--url", url, "--device", "n150", "--limit", "smoke", "--hf-endpoint", closed,
		"--offline=false", "--state-dir", t.TempDir(), "--no-progress")
	if code != exitIncomplete {
		t.Fatalf("exit %d, want 5 (INCOMPLETE)\n%s%s", code, stdout, stderr)
	}
	cause := "the Hub could not be reached: " + closed
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if n := strings.Count(text, cause); n != 1 {
			t.Errorf("%s says %q %d times, want once:\n%s", name, cause, n, text)
		}
		if n := strings.Count(text, "ttisctl dataset pull meta_ifeval meta_gpqa_cot longbench_code_e"); n != 1 {
			t.Errorf("%s gives the fix %d times, want once:\n%s", name, n, text)
		}
		if strings.Contains(text, "task meta_ifeval,") {
			t.Errorf("%s reuses the first task's error:\n%s", name, text)
		}
		for _, task := range []string{"meta_ifeval", "meta_gpqa_cot", "longbench_code_e", "longbench_synthetic_e"} {
			lines := 0
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, task+":") {
					lines++
				}
			}
			if lines != 1 {
				t.Errorf("%s names %s on %d lines, want one:\n%s", name, task, lines, text)
			}
		}
	}
}
