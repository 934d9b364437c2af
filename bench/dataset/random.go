package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// RandomOptions shape the synthetic dataset.
type RandomOptions struct {
	// InputLen is the prompt length in tokens as the server counts it
	// (special tokens such as BOS included), OutputLen the max_tokens.
	InputLen, OutputLen int
	// RangeRatio spreads lengths uniformly over [n(1-r), n(1+r)]; 0 gives
	// exact lengths. Must lie in [0, 1).
	RangeRatio float64
	NumPrompts int
	Seed       int64
	// PrefixLen, when > 0, puts one random prefix of that many tokens in
	// front of every prompt (vLLM's --random-prefix-len): a shared-prefix
	// workload for servers with prefix caching. Prompts are then PrefixLen
	// plus InputLen tokens long.
	PrefixLen int
	// Chat makes InputLen count the whole chat prompt the server builds
	// (template and special tokens included) when the tokenizer implements
	// ChatTokenizer; otherwise only the user message is counted.
	Chat bool
}

// ChatTokenizer tokenizes a one-message conversation the way the server's
// chat endpoint renders it. client.Tokenizer satisfies it.
type ChatTokenizer interface {
	TokenizeChat(ctx context.Context, userMessage string) ([]int, error)
}

func (o RandomOptions) check() error {
	switch {
	case o.InputLen < 1:
		return fmt.Errorf("random dataset: input length %d must be at least 1", o.InputLen)
	case o.OutputLen < 1:
		return fmt.Errorf("random dataset: output length %d must be at least 1", o.OutputLen)
	case o.NumPrompts < 1:
		return fmt.Errorf("random dataset: number of prompts %d must be at least 1", o.NumPrompts)
	case o.PrefixLen < 0:
		return fmt.Errorf("random dataset: prefix length %d must not be negative", o.PrefixLen)
	case o.RangeRatio < 0 || o.RangeRatio >= 1:
		return fmt.Errorf("random dataset: range ratio %g must lie in [0, 1)", o.RangeRatio)
	}
	return nil
}

// maxFixups bounds the decode/re-encode rounds per prompt, as in vLLM.
const maxFixups = 10

// Random builds prompts of exactly InputLen tokens (per the server's
// tokenizer, special tokens included) from random pseudo-words. With a nil
// tokenizer the lengths are word counts and the set says so.
//
// The server's tokenizer is used through /tokenize and /detokenize: a pool
// of random text is tokenized once, each prompt takes a window of the pool's
// ids at a random offset, and the window is decoded and re-encoded until its
// length is right (a decode can merge or split tokens at the edges).
func Random(ctx context.Context, tok Tokenizer, o RandomOptions) (*Set, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	rng := newRNG(o.Seed)
	set := &Set{Name: "random"}
	if tok == nil {
		set.Tokenizer = ApproxTokenizerName
		inLo, inHi := lengthRange(o.InputLen, o.RangeRatio, 1)
		outLo, outHi := lengthRange(o.OutputLen, o.RangeRatio, 1)
		prefix := ""
		if o.PrefixLen > 0 {
			prefix = words(rng, o.PrefixLen) + " "
		}
		for range o.NumPrompts {
			n := inLo + rng.IntN(inHi-inLo+1)
			set.Prompts = append(set.Prompts, Prompt{
				Text:         prefix + words(rng, n),
				PromptTokens: o.PrefixLen + n,
				OutputTokens: outLo + rng.IntN(outHi-outLo+1),
			})
		}
		set.Warnings = append(set.Warnings, "random dataset: no tokenizer; prompt lengths are approximate")
		return set, nil
	}
	set.Tokenizer = tok.Name()
	var special int
	var err error
	if ct, ok := tok.(ChatTokenizer); ok && o.Chat {
		special, err = chatOverhead(ctx, tok, ct)
		set.Tokenizer += ", chat template included"
	} else {
		special, err = specialTokens(ctx, tok)
		if o.Chat {
			set.Warnings = append(set.Warnings, "random dataset: the tokenizer cannot render the chat template; ISL counts the user message only")
		}
	}
	if err != nil {
		return nil, err
	}
	if o.InputLen <= special {
		return nil, fmt.Errorf("random dataset: input length %d leaves no room after %d special tokens", o.InputLen, special)
	}
	inner := o.InputLen - special
	inLo, inHi := lengthRange(inner, o.RangeRatio, 1)
	outLo, outHi := lengthRange(o.OutputLen, o.RangeRatio, 1)
	inLens := make([]int, o.NumPrompts)
	outLens := make([]int, o.NumPrompts)
	for i := range inLens {
		inLens[i] = inLo + rng.IntN(inHi-inLo+1)
	}
	for i := range outLens {
		outLens[i] = outLo + rng.IntN(outHi-outLo+1)
	}
	pool, err := tokenPool(ctx, tok, rng, max(inHi, o.PrefixLen)+64)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if o.PrefixLen > 0 {
		off := rng.IntN(len(pool))
		ids := make([]int, o.PrefixLen)
		for j := range ids {
			ids[j] = pool[(off+j)%len(pool)]
		}
		if prefix, _, err = fitLength(ctx, tok, rng, ids, o.PrefixLen); err != nil {
			return nil, fmt.Errorf("random dataset: shared prefix: %w", err)
		}
	}
	mismatched, totalOff := 0, 0
	for i := range o.NumPrompts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		off := rng.IntN(len(pool))
		want := inLens[i]
		ids := make([]int, want)
		for j := range ids {
			ids[j] = pool[(off+j)%len(pool)]
		}
		text, got, err := fitLength(ctx, tok, rng, ids, want)
		if err != nil {
			return nil, fmt.Errorf("random dataset: prompt %d: %w", i, err)
		}
		if prefix != "" {
			// The two texts may merge or split a token where they meet:
			// count the prompt as the server will.
			text = prefix + " " + text
			n, err := countTokens(ctx, tok, text, false)
			if err != nil {
				return nil, fmt.Errorf("random dataset: prompt %d: %w", i, err)
			}
			got, want = n, want+o.PrefixLen
		}
		if got != want {
			mismatched++
			totalOff += abs(got - want)
		}
		set.Prompts = append(set.Prompts, Prompt{Text: text, PromptTokens: got + special, OutputTokens: outLens[i]})
	}
	if mismatched > 0 {
		set.Warnings = append(set.Warnings, fmt.Sprintf("random dataset: %d of %d prompts missed their length after %d re-encode rounds (total %d tokens off)", mismatched, o.NumPrompts, maxFixups, totalOff))
	}
	return set, nil
}

// specialTokens counts the tokens the server adds around a prompt (BOS).
func specialTokens(ctx context.Context, tok Tokenizer) (int, error) {
	const probe = "hello world"
	with, err := tok.Tokenize(ctx, probe, true)
	if err != nil {
		return 0, fmt.Errorf("random dataset: server tokenizer: %w", err)
	}
	without, err := tok.Tokenize(ctx, probe, false)
	if err != nil {
		return 0, fmt.Errorf("random dataset: server tokenizer: %w", err)
	}
	if len(without) == 0 {
		return 0, errors.New("random dataset: server tokenizer returned no tokens for a plain sentence")
	}
	return max(len(with)-len(without), 0), nil
}

// chatOverhead counts the tokens the chat template adds around a user
// message.
func chatOverhead(ctx context.Context, tok Tokenizer, ct ChatTokenizer) (int, error) {
	const probe = "hello world"
	chat, err := ct.TokenizeChat(ctx, probe)
	if err != nil {
		return 0, fmt.Errorf("random dataset: server chat tokenizer: %w", err)
	}
	plain, err := tok.Tokenize(ctx, probe, false)
	if err != nil {
		return 0, fmt.Errorf("random dataset: server tokenizer: %w", err)
	}
	if len(plain) == 0 || len(chat) < len(plain) {
		return 0, errors.New("random dataset: server chat tokenizer returned fewer tokens than the message alone")
	}
	return len(chat) - len(plain), nil
}

// tokenPool tokenizes random text until it holds at least n ids.
func tokenPool(ctx context.Context, tok Tokenizer, rng *rand.Rand, n int) ([]int, error) {
	var sb strings.Builder
	for range maxFixups {
		sb.WriteString(words(rng, n+16))
		sb.WriteByte(' ')
		ids, err := tok.Tokenize(ctx, sb.String(), false)
		if err != nil {
			return nil, fmt.Errorf("random dataset: server tokenizer: %w", err)
		}
		if len(ids) >= n {
			return ids, nil
		}
	}
	return nil, fmt.Errorf("random dataset: server tokenizer gave fewer than %d tokens for %d bytes of text", n, sb.Len())
}

// fitLength decodes ids and re-encodes until the text is want tokens long,
// trimming or extending with random pseudo-words; it returns the text and
// its final length.
func fitLength(ctx context.Context, tok Tokenizer, rng *rand.Rand, ids []int, want int) (string, int, error) {
	var text string
	got := -1
	for range maxFixups {
		var err error
		text, err = tok.Detokenize(ctx, ids)
		if err != nil {
			return "", 0, err
		}
		re, err := tok.Tokenize(ctx, text, false)
		if err != nil {
			return "", 0, err
		}
		got = len(re)
		switch {
		case got == want:
			return text, got, nil
		case got > want:
			ids = re[:want]
		default:
			extra, err := tok.Tokenize(ctx, " "+words(rng, want-got+2), false)
			if err != nil {
				return "", 0, err
			}
			ids = append(re, extra...)
			if len(ids) > want {
				ids = ids[:want]
			}
		}
	}
	return text, got, nil
}

// syllables build pronounceable pseudo-words, so prompts look like text to
// the tokenizer without carrying any real content.
var syllables = [...]string{
	"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fu", "go",
	"ha", "je", "ki", "la", "mo", "nu", "pe", "ri", "so", "ta", "ve", "wi",
	"an", "el", "is", "on", "um", "ar", "or", "en", "in", "st", "tr", "pl",
}

// words returns n space-separated pseudo-words.
func words(rng *rand.Rand, n int) string {
	var sb strings.Builder
	sb.Grow(n * 6)
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		for range 1 + rng.IntN(3) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
	}
	return sb.String()
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
