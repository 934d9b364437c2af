package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
)

// TestConstrainedOutputs generates under a JSON schema and a regular
// expression: whatever the seed and sampling, the text is a complete match.
func TestConstrainedOutputs(t *testing.T) {
	e := newFast(t, 3)
	v, err := grammar.NewVocab(e.Tokenizer())
	if err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"word":{"type":"string","maxLength":12},"n":{"type":"integer","minimum":1,"maximum":9}},"required":["word","n"],"additionalProperties":false}`
	for _, c := range []struct {
		kind grammar.Kind
		src  string
		ok   func(string) bool
	}{
		{grammar.KindJSONSchema, schema, func(s string) bool {
			var out struct {
				Word *string
				N    int
			}
			return json.Unmarshal([]byte(s), &out) == nil && out.Word != nil && out.N >= 1 && out.N <= 9
		}},
		{grammar.KindChoice, `["the sun","a dog"]`, func(s string) bool { return s == "the sun" || s == "a dog" }},
	} {
		g, err := grammar.Compile(c.kind, c.src, grammar.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		ix, err := grammar.NewIndex(g, v, grammar.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(0); seed < 20; seed++ {
			temp := float32(seed%3) * 0.7
			req := &runtime.Request{Prompt: []int{bosID, 300}, MaxTokens: 60, Logprobs: -1, PromptLogprobs: -1,
				Sampling: runtime.Sampling{Temperature: temp, Seed: seed, HasSeed: true}, Constraint: ix.NewMatcher()}
			st, err := e.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			toks, reason := collect(t, st)
			text := e.Tokenizer().Decode(ids(toks), true)
			if reason != runtime.FinishStop || !c.ok(text) {
				t.Fatalf("%s seed %d: %q (finish %v)", c.kind, seed, text, reason)
			}
		}
	}
}

// refusing is a constraint that allows one token and then fails.
type refusing struct{}

func (refusing) Allowed(int) ([]uint64, error) { return []uint64{1 << 5}, nil }
func (refusing) Accept(int) error              { return context.DeadlineExceeded }

func TestConstraintErrorAbortsSequence(t *testing.T) {
	e := newFast(t, 1)
	st, err := e.Generate(context.Background(), &runtime.Request{Prompt: []int{bosID}, MaxTokens: 5, Logprobs: -1, PromptLogprobs: -1, Constraint: refusing{}})
	if err != nil {
		t.Fatal(err)
	}
	toks, reason := collect(t, st)
	if reason != runtime.FinishAbort || len(toks) != 0 {
		t.Fatalf("got %d tokens, finish %v", len(toks), reason)
	}
}
