//go:build !amd64 || purego

package kernels

// Without assembly every product is a plain row-by-row dot product.

func quantizeQ8(x []float32, qs []int8, d, d8 []float32) { quantizeQ8Go(x, qs, d, d8) }
func matmulF32(j *matmulJob, r0, r1 int)                 { matmulF32Go(j, r0, r1) }
func matmulF16(j *matmulJob, r0, r1 int)                 { matmulF16Go(j, r0, r1) }
func matmulBF16(j *matmulJob, r0, r1 int)                { matmulBF16Go(j, r0, r1) }
func matmulQ8_0(j *matmulJob, r0, r1 int)                { matmulQ8_0Go(j, r0, r1) }
func matmulQ4_0(j *matmulJob, r0, r1 int)                { matmulQ4_0Go(j, r0, r1) }

// useVNNI: there are no VNNI tiles without assembly.
func useVNNI(int) bool { return false }

// q8Wide: nor the eight-row VNNI tiles.
func q8Wide(int) bool { return false }

// Dot returns the dot product of a and b[:len(a)].
func Dot(a, b []float32) float32 { return dotF32Go(a, b) }

// Axpy adds alpha*x to y[:len(x)].
func Axpy(alpha float32, x, y []float32) { axpyGo(alpha, x, y) }

func expSub(x []float32, m float32) float32 { return expSubGo(x, m) }

// SwiGLU replaces gate with silu(gate)*up element-wise (the gated
// feed-forward of llama-style models).
func SwiGLU(gate, up []float32) { swigluGo(gate, up) }

// SiLU replaces x with x*sigmoid(x) in place.
func SiLU(x []float32) { siluGo(x) }

func dotQ4K(w []byte, xq []int8, xd []float32, xs []int16) float32 { return dotQ4KGo(w, xq, xd, xs) }
func dotQ6K(w []byte, xq []int8, xd []float32, _ []int16) float32  { return dotQ6KGo(w, xq, xd) }
func q6kPairSums(xq []int8, xm []int16)                            { q6kPairSumsGo(xq, xm) }

// DotRows sets out[j] = Dot(x, m[j*stride:j*stride+len(x)]) for j <
// len(out): the scores of one query against a run of cached keys in one call.
func DotRows(out, x, m []float32, stride int) { dotRowsGo(out, x, m, stride) }

// AxpyRows adds sum_j a[j]*m[j*stride:j*stride+len(y)] to y: attention's
// probability-weighted sum of cached value rows in one call.
func AxpyRows(y, a, m []float32, stride int) { axpyRowsGo(y, a, m, stride) }

func roundToF16(dst, src []float32) { roundToF16Go(dst, src) }

func q4kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	q4kTile1x4Go(w, xq, xd, xs, nb, out, os)
}

func q6kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	q6kTile1x4Go(w, xq, xd, xs, nb, out, os)
}

func q4kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ4KGo)
}

func q6kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ6K)
}

func q5kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	q5kTile1x4Go(w, xq, xd, xs, nb, out, os)
}

// q4kPair: without assembly, two row dot products.
func q4kPair(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	kPairGo(w, xq, xd, xs, nb, out, os, dotQ4KGo)
}
