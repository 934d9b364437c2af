package cpu

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
)

func TestMaskLogits(t *testing.T) {
	row := make([]float32, 130)
	for i := range row {
		row[i] = float32(i)
	}
	allowed := []uint64{1<<3 | 1<<63, math.MaxUint64} // third word missing: none allowed
	maskLogits(row, allowed)
	for i, v := range row {
		want := i == 3 || i == 63 || (i >= 64 && i < 128)
		if want != (v == float32(i)) || (!want && !math.IsInf(float64(v), -1)) {
			t.Fatalf("token %d: %v", i, v)
		}
	}
}

// TestEngineConstrainedJSON samples from the random-weight tiny model
// under a JSON schema, with logprobs: outputs parse and fit the schema,
// and reported logprobs are the model's, not the masked ones.
func TestEngineConstrainedJSON(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{})
	v, err := grammar.NewVocab(e.Tokenizer())
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Compile(grammar.KindJSONSchema, `{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":-3,"maximum":3}},"required":["ok","n"],"additionalProperties":false}`, grammar.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := grammar.NewIndex(g, v, grammar.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := e.Tokenizer().Encode("Once upon a time", true)
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(0); seed < 8; seed++ {
		req := &runtime.Request{Prompt: prompt, MaxTokens: 40, Logprobs: 0, PromptLogprobs: -1,
			Sampling: runtime.Sampling{Temperature: 1, Seed: seed, HasSeed: true}, Constraint: ix.NewMatcher()}
		toks, reason, err := collect(t, mustGenerate(t, e, req))
		if err != nil {
			t.Fatal(err)
		}
		var text []byte
		for _, tk := range toks {
			text = append(text, e.Tokenizer().TokenBytes(tk.ID)...)
			if tk.Logprob > 0 || math.IsInf(float64(tk.Logprob), 0) {
				t.Fatalf("logprob %v", tk.Logprob)
			}
		}
		var out struct {
			OK *bool
			N  *int
		}
		if err := json.Unmarshal(text, &out); err != nil || out.OK == nil || out.N == nil || *out.N < -3 || *out.N > 3 {
			t.Fatalf("seed %d: %q (finish %v): %v", seed, text, reason, err)
		}
	}
}

type failing struct{}

func (failing) Allowed(int) ([]uint64, error) { return nil, context.Canceled }
func (failing) Accept(int) error              { return nil }

func TestEngineConstraintErrorAborts(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{})
	_, reason, err := collect(t, mustGenerate(t, e, &runtime.Request{Prompt: []int{1, 5}, MaxTokens: 4, Logprobs: -1, PromptLogprobs: -1, Constraint: failing{}}))
	if reason != runtime.FinishAbort || err == nil {
		t.Fatalf("finish %v, err %v", reason, err)
	}
}
