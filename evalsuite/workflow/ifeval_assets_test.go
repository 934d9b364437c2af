package workflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// TestIFEvalAssetsFolderBesideTheHub runs ifeval with --dataset ifeval=DIR
// naming the user's assets (punkt_tab/, langdetect_profiles/): the prompts
// still come from the (fake) Hub's google/IFEval, and a prompt that needs
// sentence counting and language detection is scored, not errored.
func TestIFEvalAssetsFolderBesideTheHub(t *testing.T) {
	const profiles = "/usr/lib/python3/dist-packages/langdetect/profiles"
	if _, err := os.Stat(profiles); err != nil {
		t.Skipf("langdetect's profiles are not installed (%v): apt-get install python3-langdetect", err)
	}
	row := `{"key": 7, "prompt": "Antworte auf Deutsch in mindestens zwei Sätzen.", "instruction_id_list": ["language:response_language", "length_constraints:number_sentences"], "kwargs": [{"language": "de"}, {"num_sentences": 2, "relation": "at least"}]}` + "\n"
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "google/IFEval", "main", []hubtest.File{{Path: "ifeval_input_data.jsonl", Content: []byte(row)}})
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: t.TempDir(), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	punkt, err := filepath.Abs(filepath.Join("..", "ifeval", "testdata", "punkt_tab"))
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"punkt_tab": punkt, "langdetect_profiles": profiles} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		answer := "Der schnelle braune Fuchs springt über den faulen Hund. Er schläft danach am Flussufer."
		if !strings.Contains(req.Prompt, "Deutsch") {
			answer = "?"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"text": answer, "finish_reason": "stop"}}})
	}))
	defer srv.Close()
	oc, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", API: openai.Completions, Tasks: []string{"ifeval"},
		Datasets: map[string]string{"ifeval": dir}, Hub: hc, Concurrency: 1, MaxRetries: 1, OutputDir: t.TempDir(), CacheDir: "-", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Run.Tasks) != 1 {
		t.Fatalf("not run: %v", oc.NotRun)
	}
	if d := oc.Data["ifeval"]; d == nil || len(d.Splits) != 1 || d.Splits[0].Repo != "google/IFEval" {
		t.Fatalf("recorded data %+v", d)
	}
	got := map[string]float64{}
	for _, a := range oc.Run.Tasks[0].Aggregates {
		got[a.Key()] = a.Value
	}
	if got["prompt_level_strict_acc,none"] != 1 || oc.Run.Tasks[0].NEffective != 1 {
		t.Errorf("scores %v over %d documents", got, oc.Run.Tasks[0].NEffective)
	}
}
