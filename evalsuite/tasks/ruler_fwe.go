package tasks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// ruler_fwe (frequent words extraction) follows upstream lm-eval's
// lm_eval/tasks/ruler/fwe.yaml and fwe_utils.py: a vocabulary of
// max_seq_length/50 random six-letter "coded" words (Python's global
// random.choices, sorted, shuffled with random.Random(42), the first
// replaced by "..."), the k-th word repeated int(n * k^-2 / zeta(2))
// times, shuffled with random.Random(42), n grown by max_seq_length/32
// from max_seq_length/6 until the text reaches max_seq_length tokens and
// then stepped back once; the three most frequent real words are the
// answer, 50 tokens generated, scored with string_match_all under the
// length.
//
// The arithmetic is numpy's and scipy's in lm-eval: zeta(2) is scipy's
// value 1.6449340668482266 (one ULP above the double nearest pi^2/6, as
// scipy's documentation shows), and k^-2 is computed here as 1/(k*k), the
// exactly rounded value. CPython's (glibc's) pow gives the same for every
// k below 1253, and from there on every count is 0 for any length up to
// 131072 tokens; numpy's power is that same libm call unless numpy was
// built to use its AVX-512 (SVML) kernels, whose rounding ttis cannot
// check here and which could move one word's count by one where the
// product lands within an ULP of an integer.
const (
	fweTemplate = "Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?"
	fweAnswer   = " Answer: According to the coded text above, the three most frequently appeared words are:"
	fweToGen    = 50
	fweWordLen  = 6
	scipyZeta2  = 1.6449340668482266
)

func init() {
	register(Info{Name: "ruler_fwe", Output: evalsuite.GenerateUntil, Builtin: true,
		Description: "RULER frequent words extraction: documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; string_match_all reported under the length (\"4096\")",
		Follows:     "lm-eval lm_eval/tasks/ruler/fwe.yaml v1.0, fwe_utils.py, common_utils.py"}, buildRulerFWE)
}

type fweGen struct {
	rnd   *pyrand.Rand
	count func(string) (int, error)
}

func (g *fweGen) word() string {
	b := make([]byte, fweWordLen)
	for i, c := range g.rnd.Choices(26, fweWordLen) {
		b[i] = byte('a' + c)
	}
	return string(b)
}

// text is gen_text: the coded text for numWords and its answer.
func fweText(vocab []string, numWords int) (string, []string) {
	var words []string
	for i, w := range vocab {
		k := float64(i + 1)
		n := int(float64(numWords) * (1 / (k * k)) / scipyZeta2)
		for range n {
			words = append(words, w)
		}
	}
	pyrand.New(42).Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	text := strings.Replace(fweTemplate+fweAnswer, "{context}", strings.Join(words, " "), 1)
	return text, append([]string(nil), vocab[1:4]...)
}

// inputOutput is fwe_utils' generate_input_output; numWords <= 0 sizes
// the text to maxLen first.
func (g *fweGen) inputOutput(maxLen, numWords, vocabSize, incremental int) (string, []string, int, error) {
	var vocab []string
	seen := map[string]bool{}
	for range vocabSize {
		w := g.word()
		vocab = append(vocab, w)
		seen[w] = true
	}
	for len(seen) < vocabSize {
		w := g.word()
		vocab = append(vocab, w)
		seen[w] = true
	}
	vocab = vocab[:0]
	for w := range seen {
		vocab = append(vocab, w)
	}
	sort.Strings(vocab)
	pyrand.New(42).Shuffle(len(vocab), func(i, j int) { vocab[i], vocab[j] = vocab[j], vocab[i] })
	if len(vocab) < 4 {
		return "", nil, 0, fmt.Errorf("ruler_fwe: a vocabulary of %d words has no three answers (max_seq_length below 200)", len(vocab))
	}
	vocab[0] = "..."

	grow := numWords <= 0
	if grow {
		numWords = maxLen / fweWordLen
	}
	text, _ := fweText(vocab, numWords)
	for pass := 0; ; pass++ {
		if pass > 1<<16 {
			return "", nil, 0, fmt.Errorf("ruler_fwe: the text never fit %d tokens", maxLen)
		}
		n, err := g.count(text)
		if err != nil {
			return "", nil, 0, err
		}
		if grow && n >= maxLen || !grow && n <= maxLen {
			break
		}
		if grow {
			numWords += incremental
		} else {
			numWords -= incremental
		}
		text, _ = fweText(vocab, numWords)
	}
	if grow {
		numWords -= incremental
	}
	text, answer := fweText(vocab, numWords)
	return text, answer, numWords, nil
}

func buildRulerFWE(src Source) (*evalsuite.Task, error) {
	if src.CountTokens == nil {
		return nil, errNoTokenizer
	}
	n := rulerNumSamples
	if src.Size > 0 {
		n = src.Size
	}
	g := &fweGen{rnd: pyrand.New(rulerSeed(src)), count: src.CountTokens}
	var docs []evalsuite.Doc
	for _, l := range rulerLengths(src) {
		vocabSize, incremental := l/50, l/32
		_, _, words, err := g.inputOutput(l, -1, vocabSize, incremental)
		if err != nil {
			return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
		}
		for index := range n {
			text, answer, _, err := g.inputOutput(l, words, vocabSize, incremental)
			if err != nil {
				return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
			}
			c, err := g.count(text)
			if err != nil {
				return nil, err
			}
			outs := make([]any, len(answer))
			for i, a := range answer {
				outs[i] = a
			}
			input := strings.TrimSpace(text[:strings.LastIndex(text, fweAnswer)])
			docs = append(docs, evalsuite.Doc{ID: len(docs), Source: fmt.Sprintf("ruler_fwe@%d:%d", l, index), Fields: map[string]any{
				"index": float64(index), "input": input, "outputs": outs, "length": float64(c + fweToGen),
				"max_length": float64(l), "gen_prefix": strings.TrimSpace(fweAnswer)}})
		}
	}
	return rulerTask("ruler_fwe", "fwe_utils.fwe_download", fweToGen, docs, src), nil
}
