package r1grade

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite/mathequiv"
)

// This file is the fork's math_equal (lm_eval/tasks/r1_evals/utils.py,
// from evalscope's math parser), which grades r1_aime24 and r1_math500:
// text equal ignoring case; a reference letter against the prediction's
// choice letter; numbers equal within rel_tol 1e-4, the reference also
// read as a percentage (x/100, x, 100x); brackets dropped; tuples and
// intervals element by element; pmatrix cell by cell; equations up to
// sign; "x = v" against "v"; then symbolic equality. Where the fork asks
// sympy (symbolic_equal: parse_latex, parse_expr or latex2sympy, then
// simplify(a - b) == 0 or numerically equal within 1e-4), ttis asks
// mathequiv.SameValueTol with the same tolerance.

// numericTol is the fork's math.isclose(rel_tol=1e-4).
const numericTol = 1e-4

// MathGold is the graded form of a reference answer (postprocess_target).
func MathGold(answer string) string { return StripAnswer(answer) }

// MathCandidate is the graded form of a response (postprocess): the
// reasoning dropped, the answer extracted and normalised.
func MathCandidate(output string) string { return StripAnswer(ExtractAnswer(StripThink(output))) }

// MathScore is process_results_math: 1 when MathEqual(candidate, gold).
func MathScore(gold, candidate string) float64 {
	if MathEqual(candidate, gold) {
		return 1
	}
	return 0
}

var (
	bracketedRe = regexp.MustCompile(`^(\(|\[).+(\)|\])`)
	braceListRe = regexp.MustCompile(`\{.*,.*\}`)
)

// MathEqual is the fork's math_equal(prediction, reference).
func MathEqual(pred, ref string) bool {
	//lint:ignore SA6005 Python lower() == lower(), not case folding
	if strings.ToLower(pythonStrip(pred)) == strings.ToLower(pythonStrip(ref)) {
		return true
	}
	if strings.Contains("ABCDE", ref) && len(ref) == 1 && ChoiceClean(pred) == ref {
		return true
	}
	if p, ok := parseDigits(pred); ok {
		if r, ok := parseDigits(ref); ok {
			for _, item := range []float64{r / 100, r, r * 100} {
				if isClose(p, item) {
					return true
				}
			}
			return false
		}
	}
	if pred == "" {
		return false
	}
	ref, pred = pythonStrip(ref), pythonStrip(pred)
	if strings.Contains(pred, "pmatrix") && !strings.Contains(ref, "pmatrix") {
		ref = strToPmatrix(ref)
	}
	predStr, refStr := pred, ref
	if (strings.HasPrefix(pred, "[") && strings.HasSuffix(pred, "]") && !strings.HasPrefix(ref, "(")) ||
		(strings.HasPrefix(pred, "(") && strings.HasSuffix(pred, ")") && !strings.HasPrefix(ref, "[")) {
		predStr = strings.Trim(predStr, "[]()")
		refStr = strings.Trim(refStr, "[]()")
	}
	drop := strings.NewReplacer("{", "", "}", "", "(", "", ")", "")
	//lint:ignore SA6005 Python lower() == lower(), not case folding
	if strings.ToLower(drop.Replace(predStr)) == strings.ToLower(drop.Replace(refStr)) {
		return true
	}
	if bracketedRe.MatchString(pred) && bracketedRe.MatchString(ref) {
		pp := strings.Split(pred[1:len(pred)-1], ",")
		rp := strings.Split(ref[1:len(ref)-1], ",")
		if len(pp) == len(rp) {
			all := true
			for i := range pp {
				if !MathEqual(pp[i], rp[i]) {
					all = false
					break
				}
			}
			if all {
				return true
			}
		}
	}
	if matrixEqual(pred, ref) {
		return true
	}
	switch {
	case strings.Count(pred, "=") == 1 && strings.Count(ref, "=") == 1:
		p := strings.SplitN(pred, "=", 2)
		r := strings.SplitN(ref, "=", 2)
		pe := strings.TrimSpace(p[0]) + " - (" + strings.TrimSpace(p[1]) + ")"
		re := strings.TrimSpace(r[0]) + " - (" + strings.TrimSpace(r[1]) + ")"
		if symbolicEqual(pe, re) || symbolicEqual("-("+pe+")", re) {
			return true
		}
	case strings.Count(pred, "=") == 1 && len(strings.TrimSpace(strings.SplitN(pred, "=", 2)[0])) <= 2 && !strings.Contains(ref, "="):
		if MathEqual(strings.SplitN(pred, "=", 2)[1], ref) {
			return true
		}
	case strings.Count(ref, "=") == 1 && len(strings.TrimSpace(strings.SplitN(ref, "=", 2)[0])) <= 2 && !strings.Contains(pred, "="):
		if MathEqual(pred, strings.SplitN(ref, "=", 2)[1]) {
			return true
		}
	}
	return symbolicEqual(pred, ref)
}

func matrixEqual(pred, ref string) bool {
	isMat := func(s string) bool {
		return (strings.HasPrefix(s, `\begin{pmatrix}`) || strings.HasPrefix(s, `\begin{bmatrix}`)) &&
			(strings.HasSuffix(s, `\end{pmatrix}`) || strings.HasSuffix(s, `\end{bmatrix}`))
	}
	if !isMat(pred) || !isMat(ref) {
		return false
	}
	lines := func(s string) []string {
		body := s[len(`\begin{pmatrix}`) : len(s)-len(`\end{pmatrix}`)]
		var out []string
		for _, l := range strings.Split(body, `\\`) {
			if t := pythonStrip(l); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	pl, rl := lines(pred), lines(ref)
	if len(pl) != len(rl) {
		return false
	}
	for i := range pl {
		pp, rp := strings.Split(pl[i], "&"), strings.Split(rl[i], "&")
		if len(pp) != len(rp) {
			return false
		}
		for j := range pp {
			if !MathEqual(pp[j], rp[j]) {
				return false
			}
		}
	}
	return true
}

// strToPmatrix is the fork's str_to_pmatrix: "{1,2}" -> pmatrix rows.
func strToPmatrix(s string) string {
	var out []string
	for _, m := range braceListRe.FindAllString(pythonStrip(s), -1) {
		m = strings.Trim(m, "{}")
		out = append(out, `\begin{pmatrix}`+strings.ReplaceAll(m, ",", `\`)+`\end{pmatrix}`)
	}
	return strings.Join(out, ", ")
}

// parseDigits is the fork's parse_digits: float() of the text without
// commas, or a percentage divided by 100.
func parseDigits(s string) (float64, bool) {
	s = strings.ReplaceAll(s, ",", "")
	if f, ok := pyFloat(s); ok {
		return f, true
	}
	if strings.HasSuffix(s, "%") {
		s = strings.TrimSuffix(strings.TrimSuffix(s, "%"), `\`)
		if f, ok := pyFloat(s); ok {
			return f / 100, true
		}
	}
	return 0, false
}

// pyFloat is Python's float() on text: surrounding whitespace, a sign,
// digits with underscores between them, inf and nan.
func pyFloat(s string) (float64, bool) {
	t := pythonStrip(s)
	if t == "" || strings.Contains(t, "__") || strings.HasPrefix(t, "_") || strings.HasSuffix(t, "_") {
		return 0, false
	}
	if strings.ContainsAny(t, "xXpP") { // Go would read hex floats
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

func isClose(a, b float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= numericTol*math.Max(math.Abs(a), math.Abs(b))
}

// symbolicEqual stands for the fork's symbolic_equal: equal text, or the
// same value within the fork's numeric tolerance.
func symbolicEqual(a, b string) bool {
	if a == b {
		return true
	}
	un := strings.NewReplacer(`\\`, `\`)
	return mathequiv.SameValueTol(un.Replace(a), un.Replace(b), numericTol)
}
