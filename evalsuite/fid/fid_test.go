package fid

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from scipy")

// features are n deterministic d-dimensional vectors: correlated
// Gaussian-ish values with a per-set offset, like pool features of two
// image sets.
func features(seed uint64, n, d int, shift float64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	basis := make([][]float64, 8)
	for k := range basis {
		basis[k] = make([]float64, d)
		for j := range d {
			basis[k][j] = rng.NormFloat64()
		}
	}
	out := make([][]float32, n)
	for i := range out {
		w := make([]float64, len(basis))
		for k := range w {
			w[k] = rng.NormFloat64()
		}
		v := make([]float32, d)
		for j := range d {
			x := shift + 0.3*rng.NormFloat64()
			for k := range w {
				x += w[k] * basis[k][j] * 0.5
			}
			v[j] = float32(math.Abs(x)) // pool features are non-negative
		}
		out[i] = v
	}
	return out
}

func writeF32(t *testing.T, path string, rows [][]float32) {
	t.Helper()
	var b []byte
	for _, r := range rows {
		for _, v := range r {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// scipyFID is the independent check: NumPy writes the reference
// statistics (numpy.mean, numpy.cov(rowvar=False), numpy.savez) and scipy
// computes each distance with pytorch-fid's formula, the matrix square
// root by scipy.linalg.sqrtm of the non-symmetric product.
const scipyFID = `
import json, sys
import numpy as np, scipy.linalg
d = int(sys.argv[1])
ref = np.fromfile(sys.argv[2], dtype='<f4').reshape(-1, d).astype(np.float64)
mu1, s1 = ref.mean(axis=0), np.cov(ref, rowvar=False)
np.savez(sys.argv[3], mu=mu1, sigma=s1)
out = []
for p in sys.argv[4:]:
    g = np.fromfile(p, dtype='<f4').reshape(-1, d).astype(np.float64)
    mu2, s2 = g.mean(axis=0), np.cov(g, rowvar=False)
    covmean, _ = scipy.linalg.sqrtm(s1.dot(s2), disp=False)
    diff = mu1 - mu2
    out.append(float(diff.dot(diff) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean.real)))
print(json.dumps(out))
`

// findScipy returns a Python that has NumPy and scipy (Debian's
// python3-numpy, python3-scipy), or "" when none does.
func findScipy() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import numpy, scipy.linalg").Run() == nil {
			return p
		}
	}
	return ""
}

// tolerance is how far scipy may be from Distance. With fewer samples
// than dimensions the product of the covariances is rank-deficient, and
// scipy's Schur-based sqrtm of such a matrix carries relative errors of
// 1e-8 to 1e-7 (measured against the eigenvalue route, exact in exact
// arithmetic); with full rank the two agree to rounding. 1e-6 of a FID
// near 180 is 0.0002, far inside the reference's ranges (several units
// wide).
func tolerance(n, d int) float64 {
	if n-1 < d {
		return 1e-6
	}
	return 1e-9
}

type golden struct {
	Dims int       `json:"dims"`
	Gen  []int     `json:"gen_sizes"`
	FID  []float64 `json:"scipy_fid"`
}

// TestDistanceMatchesScipy compares Distance with scipy on the same
// features, through both of its paths (fewer samples than dimensions, and
// more). Without scipy it compares with the values scipy gave when the
// golden files were written (go test -update, with python3-scipy).
func TestDistanceMatchesScipy(t *testing.T) {
	const d = 64
	gens := []int{2, 20, 150}
	py := findScipy()
	dir := t.TempDir()
	refRows := features(1, 400, d, 1)
	var g golden
	npz := filepath.Join("testdata", "ref64.npz")
	if py != "" {
		writeF32(t, filepath.Join(dir, "ref.f32"), refRows)
		args := []string{"-c", scipyFID, strconv.Itoa(d), filepath.Join(dir, "ref.f32"), filepath.Join(dir, "ref.npz")}
		for i, n := range gens {
			p := filepath.Join(dir, "gen"+strconv.Itoa(i)+".f32")
			writeF32(t, p, features(uint64(10+i), n, d, 1.3))
			args = append(args, p)
		}
		out, err := exec.Command(py, args...).Output()
		if err != nil {
			t.Fatalf("scipy: %v", err)
		}
		g = golden{Dims: d, Gen: gens}
		if err := json.Unmarshal(out, &g.FID); err != nil {
			t.Fatal(err)
		}
		npz = filepath.Join(dir, "ref.npz")
		if *update {
			b, _ := os.ReadFile(npz)
			if err := os.WriteFile(filepath.Join("testdata", "ref64.npz"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			js, _ := json.MarshalIndent(g, "", "  ")
			if err := os.WriteFile(filepath.Join("testdata", "scipy_fid.json"), append(js, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		t.Log("python3 with numpy and scipy (Debian python3-numpy, python3-scipy) not found: comparing with the golden values scipy gave")
		b, err := os.ReadFile(filepath.Join("testdata", "scipy_fid.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(npz)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := LoadStats(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range g.Gen {
		got, err := Distance(ref, features(uint64(10+i), n, d, 1.3))
		if err != nil {
			t.Fatal(err)
		}
		rel := math.Abs(got-g.FID[i]) / math.Abs(g.FID[i])
		t.Logf("%d samples in %d dims: FID %.10g, scipy %.10g (relative difference %.2g)", n, d, got, g.FID[i], rel)
		if rel > tolerance(n, d) {
			t.Errorf("%d samples: FID %v, scipy %v (relative difference %.3g)", n, got, g.FID[i], rel)
		}
	}
}

// TestDistanceScipyFullSize runs the check at FID's real size: 100
// generated images against 2048-d statistics (tt-inference-server's
// default prompt count), where the product of the covariances is far from
// full rank. It needs scipy.
func TestDistanceScipyFullSize(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2048×2048 scipy sqrtm")
	}
	py := findScipy()
	if py == "" {
		t.Skip("python3 with numpy and scipy (Debian python3-numpy, python3-scipy) not found")
	}
	const d = 2048
	dir := t.TempDir()
	writeF32(t, filepath.Join(dir, "ref.f32"), features(3, 2500, d, 0.5))
	writeF32(t, filepath.Join(dir, "gen.f32"), features(4, 100, d, 0.6))
	out, err := exec.Command(py, "-c", scipyFID, strconv.Itoa(d), filepath.Join(dir, "ref.f32"), filepath.Join(dir, "ref.npz"), filepath.Join(dir, "gen.f32")).Output()
	if err != nil {
		t.Fatalf("scipy: %v", err)
	}
	var want []float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "ref.npz"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := LoadStats(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Distance(ref, features(4, 100, d, 0.6))
	if err != nil {
		t.Fatal(err)
	}
	rel := math.Abs(got-want[0]) / want[0]
	t.Logf("100 samples in 2048 dims: FID %.10g, scipy %.10g (relative difference %.2g)", got, want[0], rel)
	if rel > tolerance(100, d) {
		t.Errorf("FID %v, scipy %v (relative difference %.3g)", got, want[0], rel)
	}
}

func TestStatsOfIsNumpyCov(t *testing.T) {
	rows := [][]float32{{1, 2}, {3, 5}, {4, 4}}
	s, err := StatsOf(rows)
	if err != nil {
		t.Fatal(err)
	}
	// numpy.cov([[1,2],[3,5],[4,4]], rowvar=False)
	want := [][]float64{{7.0 / 3, 11.0 / 6}, {11.0 / 6, 7.0 / 3}}
	for i := range 2 {
		for j := range 2 {
			if math.Abs(s.Sigma.At(i, j)-want[i][j]) > 1e-12 {
				t.Errorf("cov[%d,%d] = %v, want %v", i, j, s.Sigma.At(i, j), want[i][j])
			}
		}
	}
	if s.Mu[0] != 8.0/3 || s.Mu[1] != 11.0/3 {
		t.Errorf("mean %v", s.Mu)
	}
}

func TestDistanceErrors(t *testing.T) {
	ref := &Stats{Mu: []float64{0, 0}}
	for _, tc := range []struct {
		rows [][]float32
		want string
	}{
		{[][]float32{{1, 2}}, "at least 2"},
		{[][]float32{{1, 2}, {1}}, "feature vector 1 has 1 values"},
		{[][]float32{{1, 2, 3}, {1, 2, 3}}, "features have 3 values, the reference statistics 2"},
		{[][]float32{{1, float32(math.NaN())}, {1, 2}}, "value 1 is NaN"},
	} {
		if _, err := Distance(ref, tc.rows); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.rows, err, tc.want)
		}
	}
}

// TestIdenticalSetsScoreZero: the distance of a set to its own statistics
// is zero (up to rounding), through both paths.
func TestIdenticalSetsScoreZero(t *testing.T) {
	for _, n := range []int{10, 80} {
		rows := features(5, n, 32, 1)
		s, err := StatsOf(rows)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Distance(s, rows)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got) > 1e-8 {
			t.Errorf("%d samples: FID to itself %v", n, got)
		}
	}
}

// BenchmarkDistance times FID at its real size: 100 prompts (fewer
// samples than dimensions) and 3000 (more; the reference's square root is
// computed once and kept).
func BenchmarkDistance(b *testing.B) {
	const d = 2048
	ref, err := StatsOf(features(3, 2100, d, 0.5))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 3000} {
		gen := features(4, n, d, 0.6)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Distance(ref, gen); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
