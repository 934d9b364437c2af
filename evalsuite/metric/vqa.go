package metric

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the visual question answering scores of lmms-eval
// v0.4.1: ChartQA's relaxed correctness (lmms_eval/tasks/chartqa/utils.py,
// from Qwen-VL) and DocVQA's ANLS (lmms_eval/api/metrics.py anls).

// pyFloat is Python's float() on text: surrounding whitespace, a sign,
// inf and nan are accepted, hexadecimal is not.
func pyFloat(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsAny(t, "xXpP_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil
}

// RelaxedCorrect is relaxed_correctness: numbers (a trailing "%" divides
// by 100) within 5% of a non-zero numeric target, otherwise equal text
// ignoring case.
func RelaxedCorrect(pred, target string) bool {
	toFloat := func(s string) (float64, bool) {
		if strings.HasSuffix(s, "%") {
			f, ok := pyFloat(strings.TrimRight(s, "%"))
			return f / 100, ok
		}
		return pyFloat(s)
	}
	p, pok := toFloat(pred)
	t, tok := toFloat(target)
	if pok && tok && t != 0 {
		return math.Abs(p-t)/math.Abs(t) <= 0.05
	}
	//lint:ignore SA6005 Python lower() == lower(), not case folding
	return strings.ToLower(pred) == strings.ToLower(target)
}

// ANLS is lmms-eval's anls for one question: 1 minus the smallest
// normalised Levenshtein distance to any reference (case and whitespace
// folded), 0 below the 0.5 threshold.
func ANLS(pred string, refs []string) float64 {
	if len(refs) == 0 {
		return 0
	}
	best := math.Inf(1)
	det := strings.Join(strings.Fields(strings.ToLower(strings.TrimSpace(pred))), " ")
	for _, ref := range refs {
		gt := strings.Join(strings.Fields(strings.ToLower(strings.TrimSpace(ref))), " ")
		length := max(utf8.RuneCountInString(strings.ToUpper(ref)), utf8.RuneCountInString(strings.ToUpper(pred)))
		v := 0.0
		if length > 0 {
			v = float64(levenshtein([]rune(gt), []rune(det))) / float64(length)
		}
		best = min(best, v)
	}
	r := 1 - best
	if r < 0.5 {
		return 0
	}
	return r
}

func levenshtein(a, b []rune) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	prev := make([]int, len(a)+1)
	for i := range prev {
		prev[i] = i
	}
	for i2, c2 := range b {
		cur := make([]int, 1, len(a)+1)
		cur[0] = i2 + 1
		for i1, c1 := range a {
			if c1 == c2 {
				cur = append(cur, prev[i1])
			} else {
				cur = append(cur, 1+min(prev[i1], prev[i1+1], cur[len(cur)-1]))
			}
		}
		prev = cur
	}
	return prev[len(prev)-1]
}
