package tasks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// ruler_cwe (common words extraction) follows upstream lm-eval's
// lm_eval/tasks/ruler/cwe.yaml and cwe_utils.py: a numbered list of words
// drawn from wonderwords' nouns, adjectives and verbs (sorted, then
// shuffled by the module's own random.Random(42), whose state then runs on
// through every list it shuffles), ten of them repeated 30 times (6 below
// 4096 tokens) and the others 3 (1); the ten are the answer, 120 tokens
// generated, string_match_all under the length. The words come from the
// user's wonderwords assets folder (--dataset), as for niah_single_1. As
// in lm-eval, the worked example cwe_utils builds counts toward the
// sizing but is not part of the prompt.
const (
	cweTemplate = "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?"
	cweAnswer   = " Answer: The top 10 words that appear most often in the list are:"
	cweToGen    = 120
)

func init() {
	register(Info{Name: "ruler_cwe", Output: evalsuite.GenerateUntil, Builtin: true,
		Description: "RULER common words extraction: documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; string_match_all reported under the length (\"4096\"); its words come from wonderwords' word lists, not shipped: --dataset ruler_cwe=DIR names the installed package's assets folder",
		Follows:     "lm-eval lm_eval/tasks/ruler/cwe.yaml v1.0, cwe_utils.py, common_utils.py"}, buildRulerCWE)
}

type cweGen struct {
	rnd, module *pyrand.Rand
	words       []string
	count       func(string) (int, error)
}

func numbered(words []string) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = strconv.Itoa(i+1) + ". " + w
	}
	return strings.Join(parts, " ")
}

// example is get_example.
func (g *cweGen) example(numWords, commonRepeats, uncommonRepeats int) (string, []string, error) {
	if numWords < 0 || numWords > len(g.words) {
		return "", nil, errQARetry // random.sample's ValueError
	}
	idx := g.rnd.Sample(len(g.words), numWords)
	full := make([]string, len(idx))
	for i, j := range idx {
		full[i] = g.words[j]
	}
	common, uncommon := full[:min(10, len(full))], full[min(10, len(full)):]
	var list []string
	for range commonRepeats {
		list = append(list, common...)
	}
	for range uncommonRepeats {
		list = append(list, uncommon...)
	}
	g.module.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	return numbered(list), common, nil
}

// inputOutput is cwe_utils' generate_input_output.
func (g *cweGen) inputOutput(numWords, maxLen int) (string, string, []string, error) {
	exN, exC, exU, c, u := 40, 10, 3, 30, 3
	if maxLen < 4096 {
		exN, exC, exU, c, u = 20, 3, 1, 6, 1
	}
	exCtx, exAns, err := g.example(exN, exC, exU)
	if err != nil {
		return "", "", nil, err
	}
	ctx, ans, err := g.example(numWords, c, u)
	if err != nil {
		return "", "", nil, err
	}
	example := strings.Replace(cweTemplate+cweAnswer, "{context}", exCtx, 1) + numbered(exAns)
	input := strings.Replace(cweTemplate+cweAnswer, "{context}", ctx, 1)
	return example, input, ans, nil
}

func (g *cweGen) samples(n, maxLen int) ([]map[string]any, error) {
	const incremental = 10
	numWords, total := incremental, 0
	for total+cweToGen < maxLen {
		example, input, ans, err := g.inputOutput(numWords, maxLen)
		if err != nil {
			return nil, fmt.Errorf("ruler_cwe: sizing the list (lm-eval fails here too): %w", err)
		}
		if total, err = g.count(example + "\n" + input + " " + numbered(ans)); err != nil {
			return nil, err
		}
		if total+cweToGen > maxLen {
			numWords -= incremental
			break
		}
		numWords += incremental
		if numWords > len(g.words) {
			numWords = len(g.words)
			break
		}
	}
	var out []map[string]any
	for index := range n {
		used := numWords
		var input string
		var ans []string
		var length int
		for try := 0; ; try++ {
			if try > 1000 {
				return nil, fmt.Errorf("ruler_cwe: no list fits in %d tokens", maxLen)
			}
			var err error
			_, input, ans, err = g.inputOutput(used, maxLen)
			if err == nil {
				var c int
				if c, err = g.count(input); err != nil {
					return nil, err
				}
				length = c + cweToGen
				if length <= maxLen {
					break
				}
			} else if err != errQARetry {
				return nil, err
			}
			if used > incremental {
				used -= incremental
			}
		}
		outs := make([]any, len(ans))
		for i, a := range ans {
			outs[i] = a
		}
		out = append(out, map[string]any{"index": float64(index), "input": strings.TrimSpace(input[:strings.LastIndex(input, cweAnswer)]),
			"outputs": outs, "length": float64(length), "max_length": float64(maxLen), "gen_prefix": strings.TrimSpace(cweAnswer)})
	}
	return out, nil
}

func buildRulerCWE(src Source) (*evalsuite.Task, error) {
	if src.CountTokens == nil {
		return nil, errNoTokenizer
	}
	if src.Dataset == "" {
		return nil, fmt.Errorf("ruler_cwe draws its words from wonderwords' word lists, which ttis does not ship: pass --dataset ruler_cwe=DIR, DIR being the assets folder of the wonderwords package lm-eval uses (site-packages/wonderwords/assets, holding nounlist.txt, adjectivelist.txt and verblist.txt)")
	}
	seen := map[string]bool{}
	var words []string
	for _, f := range []string{"nounlist.txt", "adjectivelist.txt", "verblist.txt"} {
		list, err := readWordList(src.Dataset, f)
		if err != nil {
			return nil, err
		}
		for _, w := range list {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	sort.Strings(words)
	module := pyrand.New(42)
	module.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	n := rulerNumSamples
	if src.Size > 0 {
		n = src.Size
	}
	g := &cweGen{rnd: pyrand.New(rulerSeed(src)), module: module, words: words, count: src.CountTokens}
	var docs []evalsuite.Doc
	for _, l := range rulerLengths(src) {
		rows, err := g.samples(n, l)
		if err != nil {
			return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
		}
		for i, r := range rows {
			docs = append(docs, evalsuite.Doc{ID: len(docs), Source: fmt.Sprintf("ruler_cwe@%d:%d", l, i), Fields: r})
		}
	}
	return rulerTask("ruler_cwe", "cwe_utils.get_cw_dataset", cweToGen, docs, src), nil
}
