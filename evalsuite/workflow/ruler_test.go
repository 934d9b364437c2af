package workflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

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
