package metric

import (
	"math"
	"sort"
)

// Cosine is the cosine similarity of two vectors of one length (what
// MTEB's STS evaluator computes as 1 − paired cosine distance); NaN when
// the lengths differ or a vector is all zeros.
func Cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN()
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// ranks gives each value its 1-based rank, ties sharing the mean of their
// ranks (scipy.stats.rankdata's "average").
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = r
		}
		i = j + 1
	}
	return out
}

// Pearson is the Pearson correlation; NaN when fewer than two values or
// either side is constant.
func Pearson(x, y []float64) float64 {
	n := len(x)
	if n != len(y) || n < 2 {
		return math.NaN()
	}
	mx, my := Mean(x), Mean(y)
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Spearman is scipy.stats.spearmanr's correlation: Pearson's on the
// average ranks.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	return Pearson(ranks(x), ranks(y))
}

// CorpusSpearman aggregates documents whose values are (prediction, gold)
// pairs into the Spearman correlation between the two, as MTEB's STS
// evaluator reports cosine_spearman (a fraction). Pairs whose prediction
// is NaN are left out.
func CorpusSpearman(perDoc [][]float64) float64 {
	var pred, gold []float64
	for _, d := range perDoc {
		if len(d) != 2 || math.IsNaN(d[0]) || math.IsNaN(d[1]) {
			continue
		}
		pred = append(pred, d[0])
		gold = append(gold, d[1])
	}
	return Spearman(pred, gold)
}
