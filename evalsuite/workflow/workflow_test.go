package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/verdict"
)

// perfectArith answers ttis_arith questions correctly by computing them.
func perfectArith(t *testing.T) *httptest.Server {
	num := regexp.MustCompile(`\d+`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		q := req.Prompt[strings.LastIndex(req.Prompt, "Question: "):]
		var n []int
		for _, s := range num.FindAllString(q, -1) {
			v, _ := strconv.Atoi(s)
			n = append(n, v)
		}
		var v int
		switch {
		case strings.Contains(q, " buys "):
			v = n[0] + n[1] - n[2]
		case strings.Contains(q, " rows of "):
			v = n[0]*n[1] - n[2]
		case strings.Contains(q, " pages every day"):
			v = n[0]*n[1] + n[2]
		default:
			v = (n[0] - n[2]) / n[1]
		}
		fmt.Fprintf(w, `{"choices":[{"text":" so #### %d"}]}`, v)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunWritesGradedResults(t *testing.T) {
	srv := perfectArith(t)
	dir := t.TempDir()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	oc, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", API: openai.Completions, Tasks: []string{"ttis_arith"},
		LimitMode: "smoke", Concurrency: 2, MaxRetries: 1, OutputDir: dir, NumFewShot: -1, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	tr := oc.Run.Tasks[0]
	if tr.NEffective != 3 {
		t.Errorf("smoke mode ran %d docs, want 3", tr.NEffective)
	}
	for _, a := range tr.Aggregates {
		if a.Value != 1 {
			t.Errorf("%s = %v, want 1", a.Key(), a.Value)
		}
	}
	if g := oc.Run.Grades[0]; g.Check != verdict.NA || g.Score == nil || *g.Score != 100 {
		t.Errorf("grade %+v", g)
	}
	for _, p := range append([]string{oc.Files.Results, oc.Files.Summary}, oc.Files.Samples...) {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if filepath.Base(oc.Files.Results) != "results_2026-01-02T03-04-05.000000.json" {
		t.Errorf("results file %s", oc.Files.Results)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	base := Config{BaseURL: "http://127.0.0.1:1", Model: "m", Tasks: []string{"ttis_arith"}, OutputDir: t.TempDir(), NumFewShot: -1}
	for name, mut := range map[string]func(*Config){
		"no tasks":          func(c *Config) { c.Tasks = nil },
		"bad mode":          func(c *Config) { c.LimitMode = "weekly" },
		"bad limit":         func(c *Config) { c.Limit = "-3" },
		"dataset for other": func(c *Config) { c.Datasets = map[string]string{"gsm8k": "x.jsonl"} },
		"bad policy":        func(c *Config) { c.ErrorPolicy = "ignore" },
	} {
		c := base
		mut(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	// A task that cannot be built is not run, with the reason, and the
	// others still are not prevented.
	c := base
	c.Tasks = []string{"hellaswag"}
	oc, err := Run(context.Background(), c)
	if err != nil || oc.NotRun["hellaswag"] == "" || len(oc.Run.Tasks) != 0 || oc.Files.Results != "" {
		t.Errorf("unknown task: %+v %v, want it listed as not run and no files", oc, err)
	}
}

// serveUnit starts `ttisd serve` on unitText and returns the server root
// once /health answers 200.
func serveUnit(t *testing.T, unitText string) string {
	t.Helper()
	return testbin.Serve(t, unitText).URL
}

// smoke runs a generation task and a log-likelihood task, three documents
// each, and checks that every sample was answered and scored.
func smoke(t *testing.T, url string) {
	t.Helper()
	dir := t.TempDir()
	oc, err := Run(context.Background(), Config{BaseURL: url, Model: "", API: openai.Completions,
		Tasks: []string{"ttis_arith", "ttis_arith_mc"}, LimitMode: "smoke", MaxGenToks: 24, NumFewShot: 1,
		Concurrency: 2, MaxRetries: 2, Timeout: time.Minute, OutputDir: dir, CacheDir: "-"}.withModel(t, url))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range oc.Run.Tasks {
		if tr.NEffective != 3 || tr.Errors.Errored != 0 {
			t.Errorf("%s: %d docs, errors %+v", tr.Task.Name, tr.NEffective, tr.Errors)
		}
		for _, s := range tr.Samples {
			if s.Err == nil && len(s.Scored) == 0 {
				t.Errorf("%s doc %d unscored", tr.Task.Name, s.DocID)
			}
		}
	}
	t.Logf("summary:\n%s", results.Markdown(oc.Run))
}

func (c Config) withModel(t *testing.T, url string) Config {
	srv, err := openai.New(openai.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cards, err := srv.Models(context.Background())
	if err != nil || len(cards) == 0 {
		t.Fatalf("models: %v %v", cards, err)
	}
	c.Model = cards[0].ID
	return c
}

// TestSmokeSimUnit is the plumbing check against `ttisd serve` with the
// simulated runtime (its text is synthetic, so only completeness counts).
func TestSmokeSimUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts ttisd; TestRunWritesGradedResults covers the workflow")
	}
	url := serveUnit(t, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\nseed = 7\n")
	smoke(t, url)
}

// TestSmokeCPUUnit runs the smoke eval against a real GGUF model served by
// the cpu runtime.
func TestSmokeCPUUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts ttisd with a real model")
	}
	model := filepath.Join(filepath.Dir(testbin.ModuleRoot(t)), "shared", "models", "stories260K-f32.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("test model absent (%v); it lives in ../shared/models next to the repository", err)
	}
	url := serveUnit(t, fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\n[cpu]\nthreads = 1\n", model))
	smoke(t, url)
}
