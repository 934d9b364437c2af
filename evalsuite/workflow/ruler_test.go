package workflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/openai"
)

// needleServer answers /tokenize in vLLM's shape (one token per word,
// plus BOS when asked) and completes a RULER prompt by looking up the
// queried key's needle in the haystack: a model that retrieves perfectly.
func needleServer(t *testing.T, tokenized *int) *httptest.Server {
	query := regexp.MustCompile(`for (\S+) mentioned in the provided text is$`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt           string `json:"prompt"`
			AddSpecialTokens bool   `json:"add_special_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/tokenize" {
			*tokenized++
			ids := make([]int, len(strings.Fields(req.Prompt)))
			if req.AddSpecialTokens {
				ids = append(ids, 1)
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids)})
			return
		}
		answer := "unknown"
		if m := query.FindStringSubmatch(req.Prompt); m != nil {
			if _, after, ok := strings.Cut(req.Prompt, "for "+m[1]+" is: "); ok {
				answer, _, _ = strings.Cut(after, ".")
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": " " + answer + "."}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunRulerCutsWithTheServersTokenizer runs niah_multikey_3 end to end:
// the documents are cut with the server's /tokenize at the requested
// lengths, and a model that finds the needle scores 1 at each length.
func TestRunRulerCutsWithTheServersTokenizer(t *testing.T) {
	calls := 0
	srv := needleServer(t, &calls)
	oc, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", API: openai.Completions, Tasks: []string{"niah_multikey_3"},
		BuiltinSize: 2, SeqLengths: []int{1024, 2048}, Concurrency: 2, MaxRetries: 1, OutputDir: t.TempDir(), CacheDir: "-", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Run.Tasks) != 1 {
		t.Fatalf("not run: %v", oc.NotRun)
	}
	tr := oc.Run.Tasks[0]
	got := map[string]float64{}
	for _, a := range tr.Aggregates {
		got[a.Key()] = a.Value
	}
	if got["1024,none"] != 1 || got["2048,none"] != 1 || got["4096,none"] != -1 || tr.NEffective != 4 {
		t.Errorf("scores %v over %d documents", got, tr.NEffective)
	}
	if calls == 0 {
		t.Error("the server's tokenizer was never asked")
	}
	for _, s := range tr.Samples {
		l, _ := s.Doc["length"].(float64)
		m, _ := s.Doc["max_length"].(float64)
		if m == 0 || l > m || l < m-200 {
			t.Errorf("document %d: %v tokens for a %v-token length", s.DocID, l, m)
		}
	}
}

// TestRulerOnSimUnit generates niah_multikey_3 with the tokenizer of a
// real `ttisd serve` (simulated runtime) and runs it: the documents fit
// the requested length in that server's tokens, and every sample is
// answered and scored (the sim's text is synthetic, so only completeness
// counts). The sim's tokenizer spells RULER's filler words byte by byte,
// so ruler_vt's worked example, five filler lines at least, cannot fit
// its 500 tokens: lm-eval would retry forever, ttis reports it.
func TestRulerOnSimUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts ttisd; TestRunRulerCutsWithTheServersTokenizer covers the workflow")
	}
	url := serveUnit(t, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\nseed = 7\n")
	oc, err := Run(context.Background(), Config{BaseURL: url, API: openai.Completions, Tasks: []string{"niah_multikey_3", "ruler_vt"},
		BuiltinSize: 2, SeqLengths: []int{1024}, Concurrency: 2, MaxRetries: 2, Timeout: time.Minute, OutputDir: t.TempDir(), CacheDir: "-"}.withModel(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Run.Tasks) != 1 || !strings.Contains(oc.NotRun["ruler_vt"], "no sample fits in 500 tokens") {
		t.Fatalf("ran %d tasks, not run: %v", len(oc.Run.Tasks), oc.NotRun)
	}
	for _, tr := range oc.Run.Tasks {
		if tr.NEffective != 2 || tr.Errors.Errored != 0 {
			t.Errorf("%s: %d docs, errors %+v", tr.Task.Name, tr.NEffective, tr.Errors)
		}
		for _, s := range tr.Samples {
			l, _ := s.Doc["length"].(float64)
			if l > 1024 || l < 512 || len(s.Scored) == 0 {
				t.Errorf("%s doc %d: %v tokens, scored %v", tr.Task.Name, s.DocID, l, s.Scored)
			}
		}
	}
}
