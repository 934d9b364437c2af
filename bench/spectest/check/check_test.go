package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/bench/spectest/check"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// simUnit is a sim unit of model on device that answers at once.
func simUnit(model, device string) string {
	return fmt.Sprintf("model = %q\ndevice = %q\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n", model, device)
}

func spec(t *testing.T, model, device string) *catalog.Spec {
	t.Helper()
	s, err := catalog.Lookup(model, device)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run plans the tests of spec (a 2 s stability load) and runs them
// against the server at url.
func run(t *testing.T, url string, s *catalog.Spec, only ...string) []spectest.Result {
	t.Helper()
	plan, err := spectest.Plan(spectest.Input{Spec: s, Limit: limit.Smoke, Runtime: "sim",
		Tests: units.Tests{StabilityDuration: units.Duration{Duration: 2 * time.Second}, StabilityConcurrency: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(only) > 0 {
		var keep []spectest.Test
		for _, tc := range plan {
			for _, o := range only {
				if tc.Name == o {
					keep = append(keep, tc)
				}
			}
		}
		plan = keep
	}
	c, err := openai.New(openai.Config{BaseURL: url, MaxConns: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return check.Run(ctx, check.Config{Client: c, Model: s.ModelName, Tests: plan, RequestTimeout: time.Minute})
}

func show(r spectest.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s\n", r.Name, r.Verdict, r.Summary)
	for _, e := range r.Evidence {
		fmt.Fprintf(&b, "  [%v] %s\n    request:  %s\n    expected: %s\n    got:      %s\n", e.Pass, e.Check, e.Request, e.Expected, e.Got)
	}
	return b.String()
}

// expect checks every result: the tests named in fails FAIL (each a known
// gap of the server, named with its reason in the test), and the others
// that are required PASS.
func expect(t *testing.T, results []spectest.Result, fails map[string]string) {
	t.Helper()
	for _, r := range results {
		t.Log(show(r))
		_, gap := fails[r.Name]
		switch {
		case gap && r.Verdict != spectest.Fail:
			t.Errorf("%s: the server's known gap (%s) did not fail it:\n%s", r.Name, fails[r.Name], show(r))
		case !gap && r.Required && r.Verdict != spectest.Pass:
			t.Errorf("%s did not pass:\n%s", r.Name, show(r))
		}
		if r.Verdict != "" && len(r.Evidence) == 0 {
			t.Errorf("%s: a verdict without evidence", r.Name)
		}
		for _, e := range r.Evidence {
			if len(e.Request) > spectest.MaxField+40 || len(e.Got) > spectest.MaxField+40 {
				t.Errorf("%s: evidence not truncated: %d/%d bytes", r.Name, len(e.Request), len(e.Got))
			}
		}
	}
}

// A sim unit of a catalog LLM keeps every promise of its spec: the text
// suite passes against a real `ttisd serve` process.
func TestTextSuiteAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	srv := testbin.Serve(t, simUnit("Llama-3.1-8B-Instruct", "n150"))
	results := run(t, srv.URL, spec(t, "Llama-3.1-8B-Instruct", "n150"))
	if len(results) != 14 {
		t.Fatalf("%d results, want the text suite's 14", len(results))
	}
	expect(t, results, nil)
	for _, r := range results {
		if r.Name == "stability" && (!strings.Contains(r.Summary, "not observable") || r.Requests < 4) {
			t.Errorf("stability without an observer: %s", show(r))
		}
	}
}

// dropStop is a reverse proxy that forwards every request to target with
// the "stop" field taken out of JSON bodies: a server that ignores stop.
func dropStop(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var dropped atomic.Int32
	p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		r := pr.Out
		if r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			return
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		var m map[string]json.RawMessage
		if err == nil && json.Unmarshal(b, &m) == nil {
			if _, ok := m["stop"]; ok {
				delete(m, "stop")
				dropped.Add(1)
				b, _ = json.Marshal(m)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Del("Content-Length")
	}}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.Close()
		if dropped.Load() == 0 {
			t.Error("the proxy never dropped a stop field")
		}
	})
	return srv
}

// A server that ignores stop fails the stop test, with the stop string it
// returned in the evidence; the tests it keeps still pass.
func TestBrokenStopFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	srv := testbin.Serve(t, simUnit("Llama-3.1-8B-Instruct", "n150"))
	proxy := dropStop(t, srv.URL)
	results := run(t, proxy.URL, spec(t, "Llama-3.1-8B-Instruct", "n150"), "liveness", "stop", "max_tokens")
	expect(t, results, map[string]string{"stop": "the proxy drops stop"})
	r := results[2]
	if r.Name != "stop" || len(r.Evidence) == 0 || r.Evidence[0].Pass || !strings.Contains(r.Evidence[0].Request, `"stop":[`) ||
		!strings.Contains(r.Evidence[0].Expected, "cut before") || !strings.Contains(r.Summary, "checks failed") {
		t.Errorf("stop evidence does not show the ignored stop string:\n%s", show(r))
	}
}

// A server that is not live fails liveness, and the other tests are not
// run for that one reason.
func TestDeadServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.URL})
	plan, err := spectest.Plan(spectest.Input{Spec: spec(t, "Llama-3.1-8B-Instruct", "n150")})
	if err != nil {
		t.Fatal(err)
	}
	plan[0].Params.LivenessTimeout = time.Millisecond
	results := check.Run(context.Background(), check.Config{Client: c, Model: "m", Tests: plan})
	if results[0].Verdict != spectest.Fail || !strings.Contains(results[0].Evidence[0].Got, "HTTP 503") {
		t.Errorf("liveness:\n%s", show(results[0]))
	}
	for _, r := range results[1:] {
		if r.Verdict != "" || (r.Required && !strings.Contains(r.NotRun, "failed liveness")) {
			t.Errorf("%s after a failed liveness: %s / %s", r.Name, r.Verdict, r.NotRun)
		}
	}
}

// A restart during the load fails stability, as the observer saw it.
func TestStabilitySeesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	srv := testbin.Serve(t, simUnit("Llama-3.1-8B-Instruct", "n150"))
	s := spec(t, "Llama-3.1-8B-Instruct", "n150")
	plan, _ := spectest.Plan(spectest.Input{Spec: s, Tests: units.Tests{StabilityDuration: units.Duration{Duration: 500 * time.Millisecond}}})
	c, _ := openai.New(openai.Config{BaseURL: srv.URL})
	var calls atomic.Int32
	observe := func(context.Context) (spectest.ServerState, error) {
		n := int(calls.Add(1))
		return spectest.ServerState{Restarts: n - 1, PID: 100 + n}, nil
	}
	results := check.Run(context.Background(), check.Config{Client: c, Model: s.ModelName, Tests: plan[len(plan)-1:], Observe: observe})
	r := results[0]
	if r.Verdict != spectest.Fail || !strings.Contains(show(r), "restarts 0 → 1, pid 101 → 102") {
		t.Errorf("stability with a restart:\n%s", show(r))
	}
}

// Media sim units keep their class's promises, but for the gaps between
// the sim runtime and tt-media-server's documented API, which the tests
// find and name.
func TestMediaSuitesAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	for _, tc := range []struct {
		model, device string
		gaps          map[string]string
	}{
		{"stable-diffusion-xl-base-1.0", "n150", nil},
		{"FLUX.1-schnell", "t3k", nil},
		{"Z-Image-Turbo", "p300x2", map[string]string{"image_steps": "sim takes 1 step for Z-Image-Turbo; tt-media-server's field still needs 4"}},
		{"stable-diffusion-xl-base-1.0-img-2-img", "n150", nil},
		{"whisper-large-v3", "n150", nil},
		{"speecht5_tts", "n150", map[string]string{"speech_formats": "sim answers wav, json and verbose_json, not tt-media-server's mp3 and ogg"}},
		{"resnet-50", "n150", nil},
		{"Qwen3-Embedding-8B", "n150", nil},
		{"bge-large-en-v1.5", "n150", nil},
		{"Wan2.2-T2V-A14B-Diffusers", "t3k", map[string]string{"video_steps": "sim takes 1-100 steps, tt-media-server 4-50"}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			srv := testbin.Serve(t, simUnit(tc.model, tc.device))
			results := run(t, srv.URL, spec(t, tc.model, tc.device))
			expect(t, results, tc.gaps)
		})
	}
}
