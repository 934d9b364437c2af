package tasks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// ruler_vt (variable tracking) follows upstream lm-eval's
// lm_eval/tasks/ruler/vt.yaml and vt_utils.py: one chain of five variable
// assignments (VAR X = 12345, VAR Y = VAR X, ...) hidden among repeated
// filler lines, preceded by one worked example built at 500 tokens; the
// model lists the variables holding the value. Names come from Python's
// global random (random.choices of capital letters), the value from
// numpy's legacy global generator (np.random.randint(10000, 99999)); lm-eval
// --seed S seeds both with S, and ttis seeds both alike (42 by default).
// Documents are scored with niah_single_1's process_results
// (string_match_all under the length), 30 tokens generated.

const (
	vtTemplate = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\nQuestion: Find all variables that are assigned the value {query} in the text above."
	vtAnswer   = " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are assgined the value {query}, they are: "
	vtNoise    = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
	vtToGen    = 30
	vtHops     = 4
	vtChains   = 1
)

func init() {
	register(Info{Name: "ruler_vt", Output: evalsuite.GenerateUntil, Builtin: true,
		Description: "RULER variable tracking: documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; string_match_all reported under the length (\"4096\")",
		Follows:     "lm-eval lm_eval/tasks/ruler/vt.yaml v1.0, vt_utils.py, common_utils.py"}, buildRulerVT)
}

// vtGen holds the two global generators vt_utils draws from.
type vtGen struct {
	py, np *pyrand.Rand
	count  func(string) (int, error)
}

// errVTRetry is an exception vt_utils' sampling loop swallows and retries
// after (a chain shorter than its hops, too few filler lines).
var errVTRetry = errors.New("ruler_vt: this draw cannot be laid out")

func (g *vtGen) name(k int) string {
	b := make([]byte, k)
	for i, c := range g.py.Choices(26, k) {
		b[i] = byte('A' + c)
	}
	return string(b)
}

// chains is generate_chains.
func (g *vtGen) chains(isICL bool) (vars, chains [][]string, err error) {
	k, hops := 5, vtHops
	if isICL {
		k, hops = 3, min(10, vtHops)
	}
	var all []string
	seen := map[string]bool{}
	for range (hops + 1) * vtChains {
		all = append(all, g.name(k))
		seen[all[len(all)-1]] = true
	}
	for len(seen) < vtChains*(hops+1) {
		all = append(all, g.name(k))
		seen[all[len(all)-1]] = true
	}
	for i := 0; i < len(all); i += hops + 1 {
		these := all[i:min(i+hops+1, len(all))]
		vars = append(vars, these)
		chain := []string{"VAR " + these[0] + " = " + strconv.Itoa(g.np.NumpyRandInt(10000, 99999))}
		for j := range hops {
			if j+1 >= len(these) {
				return nil, nil, errVTRetry // Python's IndexError
			}
			chain = append(chain, "VAR "+these[j+1]+" = VAR "+these[j]+" ")
		}
		chains = append(chains, chain)
	}
	return vars, chains, nil
}

// inputOutput is vt_utils' generate_input_output.
func (g *vtGen) inputOutput(numNoises int, isICL bool) (string, []string, error) {
	vars, chains, err := g.chains(isICL)
	if err != nil {
		return "", nil, err
	}
	var sentences []string
	for range numNoises {
		sentences = append(sentences, vtNoise)
	}
	if len(sentences) <= len(chains[0]) {
		var pieces []string
		for _, n := range sentences {
			for _, x := range strings.Split(n, ".") {
				if strings.TrimSpace(x) != "" {
					x += "."
				}
				pieces = append(pieces, x)
			}
		}
		sentences = pieces
		if len(sentences) <= len(chains[0]) {
			for i, c := range chains {
				// chain[:len(sentences)-1], where -1 (no lines at
				// all) drops the last element, as Python slices.
				keep := len(sentences) - 1
				if keep < 0 {
					keep = max(len(c)+keep, 0)
				}
				chains[i] = c[:min(keep, len(c))]
			}
		}
	}
	for _, chain := range chains {
		if len(chain) > len(sentences) {
			return "", nil, errVTRetry // random.sample's ValueError
		}
		pos := g.py.Sample(len(sentences), len(chain))
		sortAsc(pos)
		for j, p := range pos {
			at := p + j
			sentences = append(sentences[:at], append([]string{chain[j]}, sentences[at:]...)...)
		}
	}
	if len(chains[0]) == 0 {
		return "", nil, errVTRetry // chains[0][0]'s IndexError
	}
	context := strings.ReplaceAll(strings.Join(sentences, " "), ". \n", ".\n")
	eq := strings.Split(chains[0][0], "=")
	value := strings.TrimSpace(eq[len(eq)-1])
	input := strings.NewReplacer("{context}", context, "{query}", value, "{num_v}", strconv.Itoa(vtHops+1)).Replace(vtTemplate + vtAnswer)
	return input, vars[0], nil
}

func sortAsc(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// pyListRepr writes a list of plain strings as Python's str() of a list.
func pyListRepr(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// randomizeICL is vt_utils' randomize_icl: each answer variable of the
// example renamed, everywhere, to fresh capitals of the same length.
func (g *vtGen) randomizeICL(example string) string {
	cut := strings.Index(example, vtAnswer[len(vtAnswer)-10:])
	for _, item := range strings.Fields(example[cut+10:]) {
		example = strings.ReplaceAll(example, item, g.name(len(item)))
	}
	return example
}

// samples is sys_vartrack_w_noise_random; icl is nil when it builds the
// worked example itself.
func (g *vtGen) samples(n, maxLen, incremental int, icl map[string]any) ([]map[string]any, error) {
	isICL := icl == nil
	exampleText, exampleTokens := "", 0
	if icl != nil {
		outs := icl["outputs"].([]string)
		exampleText = icl["input"].(string) + " " + strings.Join(outs, " ") + "\n\n"
		var err error
		if exampleTokens, err = g.count(exampleText); err != nil {
			return nil, err
		}
	}
	numNoises, total := incremental, 0
	for pass := 0; total+vtToGen+exampleTokens < maxLen; pass++ {
		if pass > 1<<20 {
			return nil, fmt.Errorf("ruler_vt: the prompt never reached %d tokens", maxLen)
		}
		input, answer, err := g.inputOutput(numNoises, isICL)
		if err != nil {
			return nil, fmt.Errorf("ruler_vt: sizing the haystack (lm-eval fails here too): %w", err)
		}
		if total, err = g.count(input + " " + pyListRepr(answer)); err != nil {
			return nil, err
		}
		if total+vtToGen+exampleTokens > maxLen {
			numNoises -= incremental
			break
		}
		numNoises += incremental
	}
	var out []map[string]any
	for index := range n {
		used := numNoises
		var input string
		var answer []string
		var length int
		for try := 0; ; try++ {
			if try > 1000 {
				return nil, fmt.Errorf("ruler_vt: no sample fits in %d tokens", maxLen)
			}
			var err error
			input, answer, err = g.inputOutput(used, isICL)
			if err == nil {
				var c int
				if c, err = g.count(input); err != nil {
					return nil, err
				}
				length = c + vtToGen + exampleTokens
				if length <= maxLen {
					break
				}
			} else if !errors.Is(err, errVTRetry) {
				return nil, err
			}
			if used > incremental {
				used -= incremental
			}
		}
		if icl != nil {
			cut := strings.Index(input, vtTemplate[:20])
			input = input[:cut] + g.randomizeICL(exampleText) + "\n\n" + input[cut:]
		}
		at := strings.LastIndex(input, " Answer: According to the chain(s) of variable assignment")
		prefix := strings.TrimSpace(input[at:])
		if icl != nil {
			input = input[:at]
		}
		out = append(out, map[string]any{"index": index, "input": input, "outputs": answer, "length": length,
			"max_length": maxLen, "gen_prefix": prefix})
	}
	return out, nil
}

func buildRulerVT(src Source) (*evalsuite.Task, error) {
	if src.CountTokens == nil {
		return nil, fmt.Errorf("RULER cuts its documents to token lengths with the served model's tokenizer: evaluate against a server that answers /tokenize (vLLM, llama.cpp's server, ttis)")
	}
	n := rulerNumSamples
	if src.Size > 0 {
		n = src.Size
	}
	seed := rulerSeed(src)
	g := &vtGen{py: pyrand.New(seed), np: pyrand.NewNumpyLegacy(uint32(seed)), count: src.CountTokens}
	var docs []evalsuite.Doc
	for _, l := range rulerLengths(src) {
		if l <= vtToGen {
			return nil, fmt.Errorf("max_seq_lengths: %d leaves no room for the %d tokens to generate", l, vtToGen)
		}
		// get_dataset: a fresh worked example at 500 tokens per length.
		icl, err := g.samples(1, 500, 5, nil)
		if err != nil {
			return nil, fmt.Errorf("worked example: %w", err)
		}
		rows, err := g.samples(n, l, 10, icl[0])
		if err != nil {
			return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
		}
		for i, r := range rows {
			outs := make([]any, 0, len(r["outputs"].([]string)))
			for _, o := range r["outputs"].([]string) {
				outs = append(outs, o)
			}
			fields := map[string]any{"index": float64(r["index"].(int)), "input": r["input"], "outputs": outs,
				"length": float64(r["length"].(int)), "max_length": float64(l), "gen_prefix": r["gen_prefix"]}
			docs = append(docs, evalsuite.Doc{ID: len(docs), Source: fmt.Sprintf("ruler_vt@%d:%d", l, i), Fields: fields})
		}
	}
	return rulerTask("ruler_vt", "vt_utils.get_vt_dataset", 30, docs, src), nil
}
