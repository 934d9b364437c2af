package release_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/spectest"
)

// startDaemon runs ttisd over a units folder holding one unit file and
// waits for the unit to be active; it returns the control socket.
func startDaemon(t *testing.T, ttisd, ttisctl, name, unit string) (sock, state string) {
	t.Helper()
	dir := t.TempDir()
	unitsDir := filepath.Join(dir, "units")
	state, sock = filepath.Join(dir, "state"), filepath.Join(dir, "ttisd.sock")
	if err := os.MkdirAll(unitsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.WriteFile(filepath.Join(unitsDir, name+".toml"), []byte(fmt.Sprintf("listen = %q\n%s", addr, unit)), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(ttisd, "--units-dir", unitsDir, "--state-dir", state, "--socket", sock, "--log-format", "text")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for range 300 {
		out, _ := exec.Command(ttisctl, "--socket", sock, "status", name).CombinedOutput()
		if strings.Contains(string(out), "active (running)") {
			return sock, state
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("unit %s did not become active:\n%s", name, logs.String())
	return "", ""
}

// onlyReport is the one run of unit in the store, read back.
func onlyReport(t *testing.T, state, unit string) (*release.Report, string, runs.Manifest) {
	t.Helper()
	store := &runs.Store{Root: filepath.Join(state, "runs")}
	list, errs := store.List(context.Background(), unit)
	if len(errs) > 0 || len(list) == 0 {
		t.Fatalf("runs of %s: %v %v", unit, list, errs)
	}
	m := list[0]
	dir := store.Dir(m)
	js, err := os.ReadFile(filepath.Join(dir, release.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	r, err := release.ParseJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir, m
}

// A smoke release of a sim unit through ttisd has a spec-tests step after
// its benchmarks and evals: a Spec Tests category and section in
// report.json and the report, and a stability test that asked the daemon
// for the restart count and pid. `ttisctl test` runs the tests alone.
func TestReleaseSpecTestsThroughDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd and ttisctl")
	}
	ttisd, ttisctl := build(t)
	sock, state := startDaemon(t, ttisd, ttisctl, "llama",
		"model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n[tests]\nstability_duration = \"2s\"\n")

	out, rc := ctl(t, ttisctl, "--socket", sock, "release", "llama", "--limit", "smoke", "--no-progress")
	if rc != 5 || !strings.Contains(out, "Verdict: INCOMPLETE") {
		t.Fatalf("release: exit %d, want 5 (eval references not measured)\n%s", rc, out)
	}
	r, dir, _ := onlyReport(t, state, "llama")
	if r.Tests == nil || r.Tests.Class != "text" || len(r.Tests.Rows) != 14 {
		t.Fatalf("report.json spec tests: %+v", r.Tests)
	}
	cats := map[string]string{}
	for _, c := range r.Acceptance.Categories {
		cats[c.Name] = c.Status
	}
	if cats["Spec Tests"] != release.CategoryPass || cats["Benchmarks"] == release.CategoryAbsent || cats["Evals"] == release.CategoryAbsent {
		t.Errorf("categories %v", cats)
	}
	for _, row := range r.Tests.Rows {
		if row.Required && row.Verdict != spectest.Pass {
			t.Errorf("%s: %s %s", row.Name, row.Verdict, row.Summary)
		}
		if row.Name == "stability" {
			ev := fmt.Sprint(row.Evidence)
			if !regexp.MustCompile(`restarts 0 → 0, pid (\d+) → (\d+)`).MatchString(ev) {
				t.Errorf("stability did not ask the daemon for restarts: %s", ev)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, release.ReportMarkdown))
	if err != nil || !strings.Contains(string(md), "### Spec Tests for Llama-3.1-8B-Instruct on n150") || !strings.Contains(string(md), "- Spec Tests: PASS") {
		t.Errorf("report.md lacks the spec tests: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, release.SpecTestsFile)); err != nil {
		t.Errorf("run folder: %v", err)
	}
	// The steps ran in seed 001's order: benchmarks, evals, tests.
	var js map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, release.ReportJSON))
	_ = json.Unmarshal(b, &js)
	if s := js["sections"].([]any); s[len(s)-1].(map[string]any)["kind"] != release.SpecTestsKind {
		t.Errorf("the spec-test section is not the report's last")
	}

	// The tests alone: the FUNCTIONAL spec's promises all kept is a PASS.
	out, rc = ctl(t, ttisctl, "--socket", sock, "test", "llama", "--skip", "context_length", "--no-progress")
	if rc != 5 || !regexp.MustCompile(`(?m)^context_length\s+NOT RUN`).MatchString(out) || !strings.Contains(out, "spec_tests:context_length: not run: skipped") ||
		!strings.Contains(out, "over 2s") {
		t.Errorf("test with a required test skipped: exit %d, want 5\n%s", rc, out)
	}
	out, rc = ctl(t, ttisctl, "--socket", sock, "test", "llama", "-o", "json", "--no-progress")
	var rep struct {
		Verdict  string `json:"verdict"`
		Metadata struct {
			Workflow string `json:"workflow"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rc != 0 || rep.Verdict != release.VerdictPass || rep.Metadata.Workflow != release.WorkflowTests {
		t.Errorf("test -o json: exit %d, %+v %v\n%s", rc, rep, err, out)
	}
}

// A server that breaks a promise fails `ttisctl test`: a sim unit behind
// a real reverse proxy that drops stop from every request fails the stop
// test (exit 3), with the stop string it sent and the text that came back
// in the report.
func TestTestFailsAServerThatIgnoresStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd and ttisctl")
	}
	_, ttisctl := build(t)
	target, err := url.Parse(serveSim(t, "0.0"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		r := pr.Out
		if r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			delete(m, "stop")
			b, _ = json.Marshal(m)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Del("Content-Length")
	}})
	defer proxy.Close()
	state := t.TempDir()
	out, rc := ctl(t, ttisctl, "test", "--url", proxy.URL, "--device", "n150", "--stability-duration", "1s", "--state-dir", state, "--no-progress")
	if rc != 3 || !regexp.MustCompile(`(?m)^stop\s+FAIL`).MatchString(out) || !strings.Contains(out, "failed: spec_tests:stop") {
		t.Fatalf("test of a server that ignores stop: exit %d, want 3\n%s", rc, out)
	}
	if !regexp.MustCompile(`(?m)^max_tokens\s+PASS`).MatchString(out) {
		t.Errorf("the promises the proxy keeps should pass:\n%s", out)
	}
	r, dir, _ := onlyReport(t, state, "")
	for _, row := range r.Tests.Rows {
		if row.Name != "stop" {
			continue
		}
		e := row.Evidence[0]
		if e.Pass || !strings.Contains(e.Request, `"stop":[`) || !strings.Contains(e.Expected, "cut before") || !strings.Contains(e.Got, `finish_reason "length"`) {
			t.Errorf("stop evidence %+v", e)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, release.ReportMarkdown))
	if !strings.Contains(string(md), "#### stop: FAIL") || !strings.Contains(string(md), "restarts not observable") {
		t.Errorf("report.md:\n%s", md)
	}
}
