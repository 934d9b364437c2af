package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// ruler_qa_hotpot follows upstream lm-eval's lm_eval/tasks/ruler/
// qa_hotpot.yaml (which includes qa_squad.yaml) and qa_utils.py: each
// HotpotQA dev question with its own ten paragraphs plus paragraphs drawn
// from the rest of the set, as many as fit max_seq_length with 32 tokens
// to generate, numbered "Document i:" after a shuffle with
// random.Random(42). The data is the file lm-eval downloads,
// hotpot_dev_distractor_v1.json of the Hub dataset namlh2004/hotpotqa at
// the revision lm-eval pins. Distractors come from Python's global random
// after `lm_eval --seed 42` (ttis: 42 unless Source.Seed is set). Scoring
// is common_utils.process_results_part, which for lm-eval's one
// prediction per document is the share of gold answers found in it.
//
// ruler_qa_squad is the same over SQuAD 2.0 dev, whose answerable
// questions come with their paragraph and the article's other paragraphs
// as first distractors. lm-eval reads dev-v2.0.json from
// rajpurkar.github.io, outside the Hub; ttis reads the Hub copy
// rajpurkar/squad_v2 (validation split), one row per question in the
// file's order, and rebuilds articles (consecutive rows of one title) and
// paragraphs (consecutive rows of one context). A question is impossible
// when its answer list is empty, as the copy writes is_impossible. The
// one thing the copy cannot show is a paragraph without questions, or two
// identical paragraphs in a row; SQuAD 2.0 dev has neither to ttis's
// knowledge, but a reviewer comparing documents should know the
// reconstruction rests on it.

const (
	qaTemplate = "Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}"
	qaToGen    = 32
	// qaHotpotRevision is the commit lm-eval's read_hotpotqa URL pins.
	qaHotpotRevision = "7e54db4656209750ff487f6fdf8e39a66dba136b"
	qaHotpotFile     = "hotpot_dev_distractor_v1.json"
)

func init() {
	register(Info{Name: "ruler_qa_hotpot", Output: evalsuite.GenerateUntil,
		Description: "RULER QA on HotpotQA dev (distractor): documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; the share of gold answers found, under the length (\"4096\"); the local file is hotpot_dev_distractor_v1.json in its own layout",
		Follows:     "lm-eval lm_eval/tasks/ruler/qa_hotpot.yaml, qa_squad.yaml v1.0, qa_utils.py, common_utils.py",
		Data:        []HubData{{Role: RoleTest, Repo: "namlh2004/hotpotqa", Split: "dev_distractor", Revision: qaHotpotRevision, Files: qaHotpotFile}}},
		buildRulerQAHotpot)
	register(Info{Name: "ruler_qa_squad", Output: evalsuite.GenerateUntil,
		Description: "RULER QA on SQuAD 2.0 dev (answerable questions): documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; the share of gold answers found, under the length (\"4096\"); read from the Hub copy rajpurkar/squad_v2 (fields title, context, question, answers)",
		Follows:     "lm-eval lm_eval/tasks/ruler/qa_squad.yaml v1.0, qa_utils.py, common_utils.py",
		Data:        []HubData{parquetSplit(RoleTest, "rajpurkar/squad_v2", "squad_v2", "validation")}},
		buildRulerQASquad)
}

// readSquad is read_squad on the Hub copy's rows.
func readSquad(rows []evalsuite.Doc) ([]qaItem, []string, error) {
	type para struct {
		context string
		qas     []qaItem
	}
	type article struct {
		title string
		paras []*para
	}
	var arts []*article
	for _, d := range rows {
		if d.Invalid != nil {
			return nil, nil, d.Invalid
		}
		title, err := d.Str("title")
		if err != nil {
			return nil, nil, err
		}
		ctx, err := d.Str("context")
		if err != nil {
			return nil, nil, err
		}
		q, err := d.Str("question")
		if err != nil {
			return nil, nil, err
		}
		ans, ok := d.Fields["answers"].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: field \"answers\" must be an object with a \"text\" list", d.Source)
		}
		texts, err := evalsuite.Doc{Source: d.Source, Fields: ans}.Strings("text")
		if err != nil {
			return nil, nil, err
		}
		if len(arts) == 0 || arts[len(arts)-1].title != title {
			arts = append(arts, &article{title: title})
		}
		a := arts[len(arts)-1]
		if len(a.paras) == 0 || a.paras[len(a.paras)-1].context != ctx {
			a.paras = append(a.paras, &para{context: ctx})
		}
		p := a.paras[len(a.paras)-1]
		if len(texts) > 0 {
			p.qas = append(p.qas, qaItem{query: q, outputs: texts})
		}
	}
	seen := map[string]bool{}
	var docs []string
	for _, a := range arts {
		for _, p := range a.paras {
			if !seen[p.context] {
				seen[p.context] = true
				docs = append(docs, p.context)
			}
		}
	}
	sort.Strings(docs)
	index := make(map[string]int, len(docs))
	for i, c := range docs {
		index[c] = i
	}
	var qas []qaItem
	for _, a := range arts {
		var more []int
		for _, p := range a.paras {
			more = append(more, index[p.context])
		}
		for _, p := range a.paras {
			self := index[p.context]
			var others []int
			for _, i := range more {
				if i != self {
					others = append(others, i)
				}
			}
			for _, q := range p.qas {
				q.context = []int{self}
				q.more = others
				qas = append(qas, q)
			}
		}
	}
	return qas, docs, nil
}

// qaItem is one question of read_hotpotqa: its gold answers and the
// indices of its own paragraphs in the sorted, deduplicated corpus.
type qaItem struct {
	query   string
	outputs []string
	context []int
	more    []int // SQuAD's other paragraphs of the article; empty for HotpotQA
}

// readHotpot is read_hotpotqa on the file's rows.
func readHotpot(path string) ([]qaItem, []string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// A pulled split kept as a folder of numbered files.
		m, _ := filepath.Glob(filepath.Join(path, "*"+qaHotpotFile))
		if len(m) != 1 {
			return nil, nil, fmt.Errorf("%s: want one %s in the folder, found %d", path, qaHotpotFile, len(m))
		}
		path = m[0]
	}
	raw, err := dataset.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var rows []struct {
		Question *string             `json:"question"`
		Answer   *string             `json:"answer"`
		Context  [][]json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, nil, fmt.Errorf("%s: want HotpotQA's JSON list of questions: %w", path, err)
	}
	paraOf := func(i, j int, pair []json.RawMessage) (string, error) {
		var title string
		var sents []string
		if len(pair) != 2 || json.Unmarshal(pair[0], &title) != nil || json.Unmarshal(pair[1], &sents) != nil {
			return "", fmt.Errorf("%s: question %d: context[%d] is not [title, [sentences]]", path, i, j)
		}
		return title + "\n" + strings.Join(sents, ""), nil
	}
	seen := map[string]bool{}
	var docs []string
	for i, r := range rows {
		if r.Question == nil || r.Answer == nil {
			return nil, nil, fmt.Errorf("%s: question %d has no \"question\" or \"answer\"", path, i)
		}
		for j, pair := range r.Context {
			p, err := paraOf(i, j, pair)
			if err != nil {
				return nil, nil, err
			}
			if !seen[p] {
				seen[p] = true
				docs = append(docs, p)
			}
		}
	}
	sort.Strings(docs) // byte order of UTF-8 is Python's code point order
	index := make(map[string]int, len(docs))
	for i, d := range docs {
		index[d] = i
	}
	qas := make([]qaItem, len(rows))
	for i, r := range rows {
		q := qaItem{query: *r.Question, outputs: []string{*r.Answer}}
		for j, pair := range r.Context {
			p, _ := paraOf(i, j, pair)
			q.context = append(q.context, index[p])
		}
		qas[i] = q
	}
	return qas, docs, nil
}

// errQARetry is the ValueError of random.sample that qa_utils' sampling
// loop swallows.
var errQARetry = errors.New("ruler_qa: too few paragraphs to draw")

type qaGen struct {
	rnd   *pyrand.Rand
	qas   []qaItem
	docs  []string
	count func(string) (int, error)
}

// sample is random.sample(population, k).
func (g *qaGen) sample(pop []int, k int) ([]int, error) {
	if k < 0 || k > len(pop) {
		return nil, errQARetry
	}
	idx := g.rnd.Sample(len(pop), k)
	out := make([]int, k)
	for i, j := range idx {
		out[i] = pop[j]
	}
	return out, nil
}

// inputOutput is qa_utils' generate_input_output.
func (g *qaGen) inputOutput(index, numDocs int) (string, []string, error) {
	if index >= len(g.qas) {
		return "", nil, fmt.Errorf("ruler_qa: %d samples asked, the data has %d questions", index+1, len(g.qas))
	}
	q := g.qas[index]
	var all []string
	if numDocs < len(g.docs) {
		var picked []int
		if numDocs-len(q.context) > len(q.more) {
			used := map[int]bool{}
			for _, i := range append(append([]int{}, q.context...), q.more...) {
				used[i] = true
			}
			var addition []int
			for i := range g.docs {
				if !used[i] {
					addition = append(addition, i)
				}
			}
			extra, err := g.sample(addition, max(0, numDocs-len(q.context)-len(q.more)))
			if err != nil {
				return "", nil, err
			}
			picked = append(append(append(picked, q.context...), q.more...), extra...)
		} else {
			extra, err := g.sample(q.more, numDocs-len(q.context))
			if err != nil {
				return "", nil, err
			}
			picked = append(append(picked, q.context...), extra...)
		}
		for _, i := range picked {
			all = append(all, g.docs[i])
		}
	} else {
		// Python binds all_docs to the corpus list itself, so the
		// shuffle below reorders the corpus for every later draw (and,
		// read_hotpotqa being cached, for later lengths too).
		all = g.docs
	}
	pyrand.New(42).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	parts := make([]string, len(all))
	for i, d := range all {
		parts[i] = "Document " + strconv.Itoa(i+1) + ":\n" + d
	}
	input := strings.NewReplacer("{context}", strings.Join(parts, "\n\n"), "{query}", q.query).Replace(qaTemplate)
	return input, q.outputs, nil
}

// samples is qa_utils' generate_samples.
func (g *qaGen) samples(n, maxLen int) ([]map[string]any, error) {
	const incremental = 10
	numDocs, total := incremental, 0
	for total+qaToGen < maxLen {
		input, answer, err := g.inputOutput(0, numDocs)
		if err != nil {
			return nil, fmt.Errorf("ruler_qa: sizing the context (lm-eval fails here too): %w", err)
		}
		if total, err = g.count(input + " " + pyStrListRepr(answer)); err != nil {
			return nil, err
		}
		if total+qaToGen > maxLen {
			numDocs -= incremental
			break
		}
		numDocs += incremental
		if numDocs > len(g.docs) {
			numDocs = len(g.docs)
			break
		}
	}
	var out []map[string]any
	for index := range n {
		used := numDocs
		var input string
		var answer []string
		var length int
		for try := 0; ; try++ {
			if try > 1000 {
				return nil, fmt.Errorf("ruler_qa: question %d does not fit in %d tokens", index, maxLen)
			}
			var err error
			input, answer, err = g.inputOutput(index, used)
			if err == nil {
				var c int
				if c, err = g.count(input); err != nil {
					return nil, err
				}
				length = c + qaToGen
				if length <= maxLen {
					break
				}
			} else if !errors.Is(err, errQARetry) {
				return nil, err
			}
			if used > incremental {
				used -= incremental
			}
		}
		outs := make([]any, len(answer))
		for i, a := range answer {
			outs[i] = a
		}
		out = append(out, map[string]any{"index": float64(index), "input": input, "outputs": outs,
			"length": float64(length), "max_length": float64(maxLen), "gen_prefix": "Answer:"})
	}
	return out, nil
}

// pyStrListRepr is Python's str() of a list of strings: each item's
// repr, single-quoted unless it holds a single quote and no double one,
// with backslashes, the quote and unprintable characters escaped.
func pyStrListRepr(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = pyStrRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func pyStrRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// rulerProcessPart is common_utils.process_results_part: for one
// prediction, max over the single (prediction, golds) pair of the share
// of golds found, divided by one prediction.
func rulerProcessPart(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	return rulerProcess(d, resp)
}

func buildRulerQAHotpot(src Source) (*evalsuite.Task, error) {
	if src.CountTokens == nil {
		return nil, errNoTokenizer
	}
	qas, docs, err := readHotpot(src.Dataset)
	if err != nil {
		return nil, err
	}
	return rulerQATask("ruler_qa_hotpot", "qa_utils.get_hotpotqa", qas, docs, src)
}

func buildRulerQASquad(src Source) (*evalsuite.Task, error) {
	if src.CountTokens == nil {
		return nil, errNoTokenizer
	}
	rows, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	qas, docs, err := readSquad(rows)
	if err != nil {
		return nil, err
	}
	return rulerQATask("ruler_qa_squad", "qa_utils.get_squad", qas, docs, src)
}

var errNoTokenizer = errors.New("RULER cuts its documents to token lengths with the served model's tokenizer: evaluate against a server that answers /tokenize (vLLM, llama.cpp's server, ttis)")

func rulerQATask(name, customDataset string, qas []qaItem, docs []string, src Source) (*evalsuite.Task, error) {
	n := rulerNumSamples
	if src.Size > 0 {
		n = src.Size
	}
	g := &qaGen{rnd: pyrand.New(rulerSeed(src)), qas: qas, docs: docs, count: src.CountTokens}
	var out []evalsuite.Doc
	for _, l := range rulerLengths(src) {
		if l <= qaToGen {
			return nil, fmt.Errorf("max_seq_lengths: %d leaves no room for the %d tokens to generate", l, qaToGen)
		}
		rows, err := g.samples(n, l)
		if err != nil {
			return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
		}
		for i, r := range rows {
			out = append(out, evalsuite.Doc{ID: len(out), Source: fmt.Sprintf("%s@%d:%d", name, l, i), Fields: r})
		}
	}
	t := rulerTask(name, customDataset, qaToGen, out, src)
	t.Process = rulerProcessPart
	t.Config["process_results"] = "common_utils.process_results_part"
	return t, nil
}
