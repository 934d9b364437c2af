package metric

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// This file holds LongBench's scores as lm-eval computes them
// (lm_eval/tasks/longbench/metrics.py, from THUDM/LongBench): the answer
// normalisation and token F1 of SQuAD, the classification, count and
// retrieval scores, ROUGE-L as the "rouge" package (pltrdy/rouge 1.0)
// computes it, and code similarity as fuzzywuzzy's fuzz.ratio on
// difflib's SequenceMatcher (lm-eval[longbench] installs fuzzywuzzy
// without python-Levenshtein).

// pyPunctuation is Python's string.punctuation.
const pyPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is LongBench's normalize_answer: lower case, ASCII
// punctuation removed, articles removed, whitespace collapsed.
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(pyPunctuation, r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(removeArticles(s)), " ")
}

// removeArticles is re.sub(r"\b(a|an|the)\b", " ", s) with Python's
// Unicode word boundaries (Go's \b knows only ASCII word characters).
func removeArticles(s string) string {
	rs := []rune(s)
	word := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]) || rs[i] == '_')
	}
	var b strings.Builder
	for i := 0; i < len(rs); {
		if !word(i - 1) {
			matched := 0
			for _, art := range []string{"an", "a", "the"} { // the regex tries a before an, but only a full word matches
				ar := []rune(art)
				if i+len(ar) <= len(rs) && string(rs[i:i+len(ar)]) == art && !word(i+len(ar)) {
					matched = len(ar)
					break
				}
			}
			if matched > 0 {
				b.WriteRune(' ')
				i += matched
				continue
			}
		}
		b.WriteRune(rs[i])
		i++
	}
	return b.String()
}

// TokenF1 is LongBench's f1_score over two token lists (multiset overlap).
func TokenF1(pred, gold []string) float64 {
	counts := map[string]int{}
	for _, t := range gold {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	p := float64(same) / float64(len(pred))
	r := float64(same) / float64(len(gold))
	return 2 * p * r / (p + r)
}

// QAF1 is qa_f1_score: TokenF1 of the normalised answers' words.
func QAF1(pred, gold string) float64 {
	return TokenF1(strings.Fields(NormalizeAnswer(pred)), strings.Fields(NormalizeAnswer(gold)))
}

var digitsRe = regexp.MustCompile(`\d+`)

// CountScore is count_score: the share of the numbers in pred that equal
// the gold count.
func CountScore(pred, gold string) float64 {
	nums := digitsRe.FindAllString(pred, -1)
	if len(nums) == 0 {
		return 0
	}
	right := 0
	for _, n := range nums {
		if n == gold {
			right++
		}
	}
	return float64(right) / float64(len(nums))
}

var paragraphRe = regexp.MustCompile(`Paragraph (\d+)`)

// RetrievalScore is retrieval_score: the share of the numbers in pred
// that equal the gold's paragraph number; a gold without one scores 0
// (the Python raises).
func RetrievalScore(pred, gold string) float64 {
	m := paragraphRe.FindStringSubmatch(gold)
	if m == nil {
		return 0
	}
	return CountScore(pred, m[1])
}

// ClassificationScore is classification_score: the classes named in pred,
// less those that are part of the gold without being it (removed while
// iterating, as the Python does, which skips the entry after each
// removal); 1/len if the gold is among them.
func ClassificationScore(pred, gold string, classes []string) float64 {
	var matched []string
	for _, c := range classes {
		if strings.Contains(pred, c) {
			matched = append(matched, c)
		}
	}
	// Python's "for x in list: list.remove(x)" visits index i, and a
	// removal shifts the next entry into the visited index.
	for i := 0; i < len(matched); i++ {
		t := matched[i]
		if strings.Contains(gold, t) && t != gold {
			k := slices.Index(matched, t)
			matched = slices.Delete(matched, k, k+1)
		}
	}
	if slices.Contains(matched, gold) {
		return 1 / float64(len(matched))
	}
	return 0
}

// CodeSim is code_sim_score: the first non-blank line of pred without a
// backtick, "#" or "//", against the gold by fuzz.ratio, over 100.
func CodeSim(pred, gold string) float64 {
	line := ""
	for _, l := range strings.Split(pred, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !strings.Contains(l, "`") && !strings.Contains(l, "#") && !strings.Contains(l, "//") {
			line = l
			break
		}
	}
	return float64(FuzzRatio(line, gold)) / 100
}

// FuzzRatio is fuzzywuzzy's fuzz.ratio: 100 for equal strings, 0 when
// either is empty, else round(100 * difflib ratio) with Python's
// round-half-to-even.
func FuzzRatio(a, b string) int {
	if a == b {
		return 100
	}
	if a == "" || b == "" {
		return 0
	}
	return int(math.RoundToEven(100 * SequenceRatio([]rune(a), []rune(b))))
}

// SequenceRatio is difflib.SequenceMatcher(None, a, b).ratio(): twice the
// matched elements over the total length, with difflib's matching blocks
// (longest match first, recursively on both sides) and its autojunk
// heuristic (in b of 200 or more elements, those occurring more than 1%
// of the time start no match).
func SequenceRatio(a, b []rune) float64 {
	total := len(a) + len(b)
	if total == 0 {
		return 1
	}
	b2j := map[rune][]int{}
	for j, r := range b {
		b2j[r] = append(b2j[r], j)
	}
	if len(b) >= 200 {
		ntest := len(b)/100 + 1
		for r, idx := range b2j {
			if len(idx) > ntest {
				delete(b2j, r)
			}
		}
	}
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(a), 0, len(b)}}
	matched := 0
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		i, j, k := longestMatch(a, b, b2j, s.alo, s.ahi, s.blo, s.bhi)
		if k == 0 {
			continue
		}
		matched += k
		if s.alo < i && s.blo < j {
			queue = append(queue, span{s.alo, i, s.blo, j})
		}
		if i+k < s.ahi && j+k < s.bhi {
			queue = append(queue, span{i + k, s.ahi, j + k, s.bhi})
		}
	}
	return 2 * float64(matched) / float64(total)
}

// longestMatch is find_longest_match without junk (isjunk is None; the
// popular elements are only left out of b2j, so they still extend a
// match).
func longestMatch(a, b []rune, b2j map[rune][]int, alo, ahi, blo, bhi int) (int, int, int) {
	besti, bestj, best := alo, blo, 0
	j2len := map[int]int{}
	for i := alo; i < ahi; i++ {
		next := map[int]int{}
		for _, j := range b2j[a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := j2len[j-1] + 1
			next[j] = k
			if k > best {
				besti, bestj, best = i-k+1, j-k+1, k
			}
		}
		j2len = next
	}
	for besti > alo && bestj > blo && a[besti-1] == b[bestj-1] {
		besti, bestj, best = besti-1, bestj-1, best+1
	}
	for besti+best < ahi && bestj+best < bhi && a[besti+best] == b[bestj+best] {
		best++
	}
	return besti, bestj, best
}

// RougeL is the "rouge" package's Rouge().get_scores([pred], [gold],
// avg=True)["rouge-l"]["f"]: both texts are split into sentences at "."
// (empty pieces dropped, whitespace collapsed) and words at " "; the
// summary-level LCS union counts distinct words (exclusive=True). ok is
// false where get_scores raises (a text with no sentence), which
// LongBench scores 0.
func RougeL(pred, gold string) (float64, bool) {
	hyp, ref := rougeSentences(pred), rougeSentences(gold)
	if len(hyp) == 0 || len(ref) == 0 {
		return 0, false
	}
	m := len(wordSet(ref))
	n := len(wordSet(hyp))
	union := map[string]bool{}
	llcs := 0
	for _, r := range ref {
		before := len(union)
		rw := strings.Split(r, " ")
		for _, h := range hyp {
			for _, w := range reconLCS(rw, strings.Split(h, " ")) {
				union[w] = true
			}
		}
		llcs += len(union) - before
	}
	rl := float64(llcs) / float64(m)
	pl := float64(llcs) / float64(n)
	return 2 * ((pl * rl) / (pl + rl + 1e-8)), true
}

func rougeSentences(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ".") {
		if p == "" {
			continue
		}
		out = append(out, strings.Join(strings.FieldsFunc(p, unicode.IsSpace), " "))
	}
	return out
}

func wordSet(sentences []string) map[string]bool {
	out := map[string]bool{}
	for _, s := range sentences {
		for _, w := range strings.Split(s, " ") {
			out[w] = true
		}
	}
	return out
}

// reconLCS is _recon_lcs: the words of one longest common subsequence of
// x and y, reconstructed from the end, preferring to drop from x only
// when that keeps a strictly longer LCS.
func reconLCS(x, y []string) []string {
	n, m := len(x), len(y)
	table := make([][]int32, n+1)
	for i := range table {
		table[i] = make([]int32, m+1)
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			if x[i-1] == y[j-1] {
				table[i][j] = table[i-1][j-1] + 1
			} else {
				table[i][j] = max(table[i-1][j], table[i][j-1])
			}
		}
	}
	var out []string
	for i, j := n, m; i > 0 && j > 0; {
		switch {
		case x[i-1] == y[j-1]:
			out = append(out, x[i-1])
			i, j = i-1, j-1
		case table[i-1][j] > table[i][j-1]:
			i--
		default:
			j--
		}
	}
	return out
}
