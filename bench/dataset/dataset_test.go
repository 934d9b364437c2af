package dataset

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wordTokenizer is a fake server tokenizer: one token per word, a BOS token
// with special tokens on; lossy drops the last word on detokenize to force
// the re-encode loop to repair the length.
type wordTokenizer struct {
	vocab map[string]int
	words []string
	lossy bool
	calls int
	fail  bool
}

func newWordTokenizer() *wordTokenizer { return &wordTokenizer{vocab: map[string]int{}} }

func (w *wordTokenizer) Name() string { return "fake word tokenizer" }

func (w *wordTokenizer) Tokenize(_ context.Context, text string, addSpecial bool) ([]int, error) {
	w.calls++
	if w.fail {
		return nil, errors.New("HTTP 404")
	}
	var ids []int
	if addSpecial {
		ids = append(ids, -1)
	}
	for _, f := range strings.Fields(text) {
		id, ok := w.vocab[f]
		if !ok {
			id = len(w.words)
			w.vocab[f] = id
			w.words = append(w.words, f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (w *wordTokenizer) Detokenize(_ context.Context, ids []int) (string, error) {
	var parts []string
	for _, id := range ids {
		parts = append(parts, w.words[id])
	}
	if w.lossy && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, " "), nil
}

func TestRandomExactLengths(t *testing.T) {
	for _, lossy := range []bool{false, true} {
		tok := newWordTokenizer()
		tok.lossy = lossy
		set, err := Random(context.Background(), tok, RandomOptions{InputLen: 50, OutputLen: 7, NumPrompts: 6, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if set.Tokenizer != "fake word tokenizer" || len(set.Prompts) != 6 {
			t.Fatalf("set %+v", set)
		}
		for i, p := range set.Prompts {
			// The server counts BOS too: 49 words + BOS = 50. A tokenizer
			// that always loses a token on decode cannot be fitted; the
			// prompt then reports its true length and the set warns.
			n := len(strings.Fields(p.Text))
			if p.PromptTokens != n+1 || p.OutputTokens != 7 || (!lossy && n != 49) {
				t.Errorf("lossy=%v prompt %d: %d words, prompt_len %d, output %d", lossy, i, n, p.PromptTokens, p.OutputTokens)
			}
		}
		if lossy != (len(set.Warnings) == 1) {
			t.Errorf("lossy=%v warnings %v", lossy, set.Warnings)
		}
	}
}

func TestRandomRangeAndReproducible(t *testing.T) {
	o := RandomOptions{InputLen: 100, OutputLen: 20, RangeRatio: 0.5, NumPrompts: 40, Seed: 3}
	a, err := Random(context.Background(), newWordTokenizer(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Random(context.Background(), newWordTokenizer(), o)
	distinct := map[int]bool{}
	for i := range a.Prompts {
		p := a.Prompts[i]
		if p.Text != b.Prompts[i].Text {
			t.Fatal("same seed gave different prompts")
		}
		// inner length 99 → [49, 149] plus BOS; output [10, 30].
		if p.PromptTokens < 50 || p.PromptTokens > 150 || p.OutputTokens < 10 || p.OutputTokens > 30 {
			t.Errorf("prompt %d lengths %d/%d out of range", i, p.PromptTokens, p.OutputTokens)
		}
		distinct[p.PromptTokens] = true
	}
	if len(distinct) < 5 {
		t.Errorf("range ratio gave only %d distinct lengths", len(distinct))
	}
}

func TestRandomErrors(t *testing.T) {
	for _, o := range []RandomOptions{
		{InputLen: 0, OutputLen: 1, NumPrompts: 1}, {InputLen: 1, OutputLen: 0, NumPrompts: 1},
		{InputLen: 1, OutputLen: 1, NumPrompts: 0}, {InputLen: 8, OutputLen: 1, NumPrompts: 1, RangeRatio: 1},
	} {
		if _, err := Random(context.Background(), newWordTokenizer(), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := Random(context.Background(), newWordTokenizer(), RandomOptions{InputLen: 1, OutputLen: 1, NumPrompts: 1}); err == nil {
		t.Error("ISL 1 with a BOS token accepted")
	}
	broken := newWordTokenizer()
	broken.fail = true
	if _, err := Random(context.Background(), broken, RandomOptions{InputLen: 8, OutputLen: 1, NumPrompts: 1}); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("tokenizer failure: %v", err)
	}
	approx, err := Random(context.Background(), nil, RandomOptions{InputLen: 8, OutputLen: 2, NumPrompts: 2})
	if err != nil || approx.Tokenizer != ApproxTokenizerName || len(approx.Warnings) == 0 || len(strings.Fields(approx.Prompts[0].Text)) != 8 {
		t.Errorf("approximate set %+v, %v", approx, err)
	}
}

func TestShareGPT(t *testing.T) {
	set, err := ShareGPT(context.Background(), newWordTokenizer(), ShareGPTOptions{Path: "testdata/sharegpt.json", NumPrompts: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Valid: a (6 prompt tokens with BOS, 6 out) and e (7, 4); b's prompt is
	// too short, c has one turn, d's output is too short.
	seen := map[string]bool{}
	for _, p := range set.Prompts {
		seen[p.Text] = true
		if p.PromptTokens < 4 || p.OutputTokens < 4 {
			t.Errorf("invalid pair kept: %+v", p)
		}
	}
	if len(set.Prompts) != 5 || len(seen) != 2 || len(set.Warnings) != 1 {
		t.Errorf("prompts %d distinct %d warnings %v", len(set.Prompts), len(seen), set.Warnings)
	}
	fixed, err := ShareGPT(context.Background(), nil, ShareGPTOptions{Path: "testdata/sharegpt.json", NumPrompts: 1, OutputLen: 2})
	if err != nil || fixed.Prompts[0].OutputTokens != 2 {
		t.Errorf("fixed output %+v %v", fixed, err)
	}
	if _, err := ShareGPT(context.Background(), nil, ShareGPTOptions{Path: "testdata/missing.json", NumPrompts: 1}); err == nil {
		t.Error("missing file accepted")
	}
}

func TestParseShareGPTErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                                  "not a JSON array",
		`[{"conversations": "x"}]`:            "entry 0",
		`[] []`:                               "trailing data",
		`[{"conversations": [{"value": 1}]}]`: "entry 0",
	} {
		if _, err := ParseShareGPT(strings.NewReader(in), "f.json"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "f.json") {
			t.Errorf("ParseShareGPT(%s) = %v, want %q", in, err, want)
		}
	}
}

func TestCustom(t *testing.T) {
	set, err := Custom(context.Background(), newWordTokenizer(), CustomOptions{Path: "testdata/custom.jsonl", NumPrompts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if set.Prompts[0].OutputTokens != 256 || set.Prompts[1].OutputTokens != 64 || set.Prompts[0].PromptTokens != 7 {
		t.Errorf("prompts %+v", set.Prompts)
	}
}

func TestParseCustomErrors(t *testing.T) {
	for in, want := range map[string]string{
		"{\"prompt\": \"a\"}\n{\"prompt\": 3}":       "c.jsonl:2",
		"\n\n{\"prompt\": \"\"}":                     "c.jsonl:3: field \"prompt\" is missing or empty",
		"{\"prompt\": \"a\", \"extra\": 1}":          "c.jsonl:1",
		"{\"prompt\": \"a\"} {\"prompt\": \"b\"}":    "c.jsonl:1: more than one JSON value",
		"{\"prompt\": \"a\", \"output_tokens\": -4}": "c.jsonl:1: field \"output_tokens\" is negative",
		"":         "no rows",
		"not json": "c.jsonl:1",
	} {
		if _, err := ParseCustom(strings.NewReader(in), "c.jsonl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCustom(%q) = %v, want %q", in, err, want)
		}
	}
}

func FuzzParseCustom(f *testing.F) {
	f.Add([]byte("{\"prompt\": \"hi\", \"output_tokens\": 3}\n\n{\"prompt\": \"x\"}\n"))
	f.Add([]byte("{\"prompt\": 1}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := ParseCustom(strings.NewReader(string(b)), "f")
		if err != nil {
			return
		}
		for _, r := range rows {
			if strings.TrimSpace(r.Prompt) == "" || r.OutputTokens < 0 {
				t.Fatalf("invalid row accepted: %+v", r)
			}
		}
	})
}

func FuzzParseShareGPT(f *testing.F) {
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}]`))
	f.Add([]byte(`[{"conversations": []}, 3]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := ParseShareGPT(strings.NewReader(string(b)), "f")
		if err == nil && len(pairs) > len(b) {
			t.Fatalf("%d pairs from %d bytes", len(pairs), len(b))
		}
	})
}

// TestRandomSharedPrefix: with PrefixLen every prompt starts with the same
// PrefixLen tokens, followed by its own InputLen tokens.
func TestRandomSharedPrefix(t *testing.T) {
	for _, tok := range []Tokenizer{newWordTokenizer(), nil} {
		set, err := Random(context.Background(), tok, RandomOptions{InputLen: 20, OutputLen: 5, PrefixLen: 30, NumPrompts: 4, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		first := strings.Fields(set.Prompts[0].Text)
		if len(first) < 30 {
			t.Fatalf("prompt %q is shorter than its prefix", set.Prompts[0].Text)
		}
		prefix := strings.Join(first[:30], " ")
		for i, p := range set.Prompts {
			words := strings.Fields(p.Text)
			// 50 tokens either way: with the fake server tokenizer 30 + 19
			// words and BOS, without one 30 + 20 words.
			wantWords := 50
			if tok != nil {
				wantWords = 49
			}
			if !strings.HasPrefix(p.Text, prefix+" ") || p.PromptTokens != 50 || len(words) != wantWords {
				t.Errorf("tokenizer %v prompt %d: %d words (want %d), prompt_len %d (want 50), shares prefix %v", tok != nil, i, len(words), wantWords, p.PromptTokens, strings.HasPrefix(p.Text, prefix+" "))
			}
		}
		if set.Prompts[0].Text == set.Prompts[1].Text {
			t.Error("prompts after the prefix are identical")
		}
	}
	if _, err := Random(context.Background(), newWordTokenizer(), RandomOptions{InputLen: 5, OutputLen: 5, PrefixLen: -1, NumPrompts: 1}); err == nil {
		t.Error("negative prefix length: no error")
	}
}

// A named pipe given as a dataset file is refused with what it is, not
// waited on.
func TestDatasetFileIsAPipe(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "data.jsonl")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan [2]error, 1)
	go func() {
		_, e1 := Custom(context.Background(), nil, CustomOptions{Path: pipe, NumPrompts: 1})
		_, e2 := ShareGPT(context.Background(), nil, ShareGPTOptions{Path: pipe, NumPrompts: 1})
		done <- [2]error{e1, e2}
	}()
	select {
	case errs := <-done:
		for _, err := range errs {
			if err == nil || !strings.Contains(err.Error(), pipe+": not a regular file (a named pipe)") {
				t.Errorf("error %v", err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading a pipe as a dataset blocked for 30s")
	}
}
