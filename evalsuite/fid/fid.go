// Package fid computes the Fréchet Inception Distance of a set of image
// features against reference statistics, as pytorch-fid's
// calculate_frechet_distance (the formula tt-inference-server's
// utils/sdxl_accuracy_utils/fid_score.py uses) defines it:
//
//	d² = ‖μ₁ − μ₂‖² + Tr(Σ₁) + Tr(Σ₂) − 2·Tr(√(Σ₁Σ₂))
//
// with Σ₂ the unbiased sample covariance (numpy.cov, rowvar=False) of the
// generated images' 2048-d pool features and (μ₁, Σ₁) the reference set's
// statistics, read from the .npz file they are published in.
//
// The matrix square root only enters through its trace, which is the sum
// of the square roots of the eigenvalues of Σ₁Σ₂. With fewer samples than
// dimensions (100 prompts against 2048 features) the non-zero ones are
// those of the small Xc·Σ₁·Xcᵀ/(N−1) (Xc the centred features); with
// more, those of Fᵀ·Σ₂·F for a factor Σ₁ = F·Fᵀ (Cholesky). Both are
// symmetric positive semi-definite, and only their eigenvalues are needed:
// gonum's LAPACK port solves them (gonum is served by the Go module proxy
// and well kept; a hand-written eigensolver would be the riskier code).
// scipy's sqrtm (a Schur method on the non-symmetric product) gives the
// same trace up to its rounding; the tests compare the two on the same
// features.
package fid

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// Stats are a feature set's mean and covariance.
type Stats struct {
	Mu    []float64
	Sigma *mat.SymDense

	factorOnce sync.Once
	fac        *mat.Dense
}

// Dims is the feature length.
func (s *Stats) Dims() int { return len(s.Mu) }

// LoadStats reads reference statistics from an .npz archive holding "mu"
// (d values) and "sigma" (d×d), the layout pytorch-fid and MLCommons'
// val2014.npz use. The covariance must be finite and symmetric.
func LoadStats(npz []byte) (*Stats, error) {
	arrs, err := ParseNPZ(npz, "mu", "sigma")
	if err != nil {
		return nil, err
	}
	mu, sigma := arrs["mu"], arrs["sigma"]
	if len(mu.Shape) != 1 || mu.Shape[0] == 0 {
		return nil, fmt.Errorf("mu has shape %v, want (d,)", mu.Shape)
	}
	d := mu.Shape[0]
	if len(sigma.Shape) != 2 || sigma.Shape[0] != d || sigma.Shape[1] != d {
		return nil, fmt.Errorf("sigma has shape %v, want (%d, %d) to match mu", sigma.Shape, d, d)
	}
	for i, v := range mu.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("mu[%d] is %v", i, v)
		}
	}
	for i := range d {
		for j := i; j < d; j++ {
			a, b := sigma.Data[i*d+j], sigma.Data[j*d+i]
			if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) {
				return nil, fmt.Errorf("sigma[%d,%d] is not finite", i, j)
			}
			if math.Abs(a-b) > 1e-6*(1+math.Abs(a)+math.Abs(b)) {
				return nil, fmt.Errorf("sigma is not symmetric: [%d,%d] = %v but [%d,%d] = %v", i, j, a, j, i, b)
			}
		}
	}
	return &Stats{Mu: mu.Data, Sigma: mat.NewSymDense(d, sigma.Data)}, nil
}

// StatsOf are the mean and unbiased covariance of features (one row per
// image), as numpy.mean(axis=0) and numpy.cov(rowvar=False) compute them.
func StatsOf(features [][]float32) (*Stats, error) {
	xc, mu, err := center(features)
	if err != nil {
		return nil, err
	}
	n, _ := xc.Dims()
	var s mat.SymDense
	s.SymOuterK(1/float64(n-1), xc.T())
	return &Stats{Mu: mu, Sigma: &s}, nil
}

// center returns the features as an N×d matrix minus their mean, and the
// mean.
func center(features [][]float32) (*mat.Dense, []float64, error) {
	n := len(features)
	if n < 2 {
		return nil, nil, fmt.Errorf("%d feature vectors: a covariance needs at least 2", n)
	}
	d := len(features[0])
	if d == 0 {
		return nil, nil, errors.New("empty feature vectors")
	}
	mu := make([]float64, d)
	for i, f := range features {
		if len(f) != d {
			return nil, nil, fmt.Errorf("feature vector %d has %d values, the first has %d", i, len(f), d)
		}
		for j, v := range f {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, nil, fmt.Errorf("feature vector %d: value %d is %v", i, j, v)
			}
			mu[j] += float64(v)
		}
	}
	for j := range mu {
		mu[j] /= float64(n)
	}
	data := make([]float64, n*d)
	for i, f := range features {
		for j, v := range f {
			data[i*d+j] = float64(v) - mu[j]
		}
	}
	return mat.NewDense(n, d, data), mu, nil
}

// factor is a matrix F with Σ = F·Fᵀ, computed once: the Cholesky factor
// (a covariance of many images is positive definite), or, when rounding
// makes Σ semi-definite, V·diag(√λ) from its eigendecomposition (slower,
// exact).
func (s *Stats) factor() *mat.Dense {
	s.factorOnce.Do(func() {
		d := s.Dims()
		var ch mat.Cholesky
		if ch.Factorize(s.Sigma) {
			var l mat.TriDense
			ch.LTo(&l)
			s.fac = mat.DenseCopyOf(&l)
			return
		}
		var eig mat.EigenSym
		if !eig.Factorize(s.Sigma, true) {
			return
		}
		vals := eig.Values(nil)
		var v mat.Dense
		eig.VectorsTo(&v)
		f := mat.NewDense(d, d, nil)
		for j, l := range vals {
			r := math.Sqrt(max(l, 0))
			for i := range d {
				f.Set(i, j, v.At(i, j)*r)
			}
		}
		s.fac = f
	})
	return s.fac
}

// Distance is the Fréchet distance between ref and the features (one row
// per generated image; at least two, of ref's length).
func Distance(ref *Stats, features [][]float32) (float64, error) {
	xc, mu, err := center(features)
	if err != nil {
		return 0, err
	}
	n, d := xc.Dims()
	if d != ref.Dims() {
		return 0, fmt.Errorf("features have %d values, the reference statistics %d", d, ref.Dims())
	}
	var diff2, tr1, tr2 float64
	for j := range d {
		x := ref.Mu[j] - mu[j]
		diff2 += x * x
		tr1 += ref.Sigma.At(j, j)
	}
	raw := xc.RawMatrix()
	for _, v := range raw.Data[:n*d] {
		tr2 += v * v
	}
	tr2 /= float64(n - 1)
	var prod *mat.SymDense
	if n-1 <= d {
		// The non-zero eigenvalues of Σ₁·XcᵀXc/(N−1) are those of
		// Xc·Σ₁·Xcᵀ/(N−1), an N×N matrix.
		var t, m mat.Dense
		t.Mul(xc, ref.Sigma)
		m.Mul(&t, xc.T())
		m.Scale(1/float64(n-1), &m)
		prod = symmetrize(&m)
	} else {
		// With Σ₁ = F·Fᵀ, Σ₁Σ₂ is similar to Fᵀ·Σ₂·F = (Xc·F)ᵀ(Xc·F)/(N−1).
		f := ref.factor()
		if f == nil {
			return 0, errors.New("the reference covariance has no factorisation")
		}
		var y mat.Dense
		y.Mul(xc, f)
		var c mat.SymDense
		c.SymOuterK(1/float64(n-1), y.T())
		prod = &c
	}
	var eig mat.EigenSym
	if !eig.Factorize(prod, false) {
		return 0, errors.New("the covariance product has no eigendecomposition")
	}
	var trSqrt float64
	for _, l := range eig.Values(nil) {
		trSqrt += math.Sqrt(max(l, 0))
	}
	return diff2 + tr1 + tr2 - 2*trSqrt, nil
}

// symmetrize averages m with its transpose (rounding leaves a product
// like Xc·Σ·Xcᵀ a little asymmetric).
func symmetrize(m *mat.Dense) *mat.SymDense {
	n, _ := m.Dims()
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, (m.At(i, j)+m.At(j, i))/2)
		}
	}
	return s
}
