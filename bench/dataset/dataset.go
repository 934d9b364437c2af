// Package dataset builds benchmark prompts: synthetic prompts of an exact
// token length measured with the server's own tokenizer ("random"), and
// prompts read from local ShareGPT JSON and custom JSONL files.
package dataset

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// Prompt is one benchmark request's input.
type Prompt struct {
	// Text is the prompt (completions) or the user message (chat).
	Text string `json:"prompt"`
	// PromptTokens is the prompt's length in tokens as measured when the
	// set was built (0 when it could not be measured).
	PromptTokens int `json:"prompt_len"`
	// OutputTokens is the requested max_tokens.
	OutputTokens int `json:"output_len"`
}

// Set is a built dataset.
type Set struct {
	// Name is "random", "sharegpt" or "custom".
	Name    string
	Prompts []Prompt
	// Tokenizer says which tokenizer measured the lengths.
	Tokenizer string
	// Warnings are notes for the result file (length mismatches,
	// oversampling, approximations).
	Warnings []string
}

// Tokenizer measures text the way the server does. client.Tokenizer
// satisfies it.
type Tokenizer interface {
	Tokenize(ctx context.Context, text string, addSpecial bool) ([]int, error)
	Detokenize(ctx context.Context, ids []int) (string, error)
	Name() string
}

// ApproxTokenizerName is recorded when no tokenizer was available and
// lengths are word counts.
const ApproxTokenizerName = "none (approximate: one word counted as one token)"

// newRNG returns the dataset's private random source for seed.
func newRNG(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// lengthRange returns the inclusive range vLLM draws lengths from:
// [floor(n(1-r)), ceil(n(1+r))], with the lower end at least lo.
func lengthRange(n int, r float64, lo int) (int, int) {
	a := max(int(math.Floor(float64(n)*(1-r))), lo)
	b := max(int(math.Ceil(float64(n)*(1+r))), a)
	return a, b
}

// oversample fills prompts up to n by drawing with replacement, as vLLM
// does when a file holds fewer usable rows than requested.
func oversample(set *Set, n int, rng *rand.Rand) {
	have := len(set.Prompts)
	if have == 0 || have >= n {
		if have > n {
			set.Prompts = set.Prompts[:n]
		}
		return
	}
	for len(set.Prompts) < n {
		set.Prompts = append(set.Prompts, set.Prompts[rng.IntN(have)])
	}
	set.Warnings = append(set.Warnings, fmt.Sprintf("%s: only %d usable prompts for %d requests; oversampled with replacement", set.Name, have, n))
}
