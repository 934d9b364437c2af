//go:build !amd64 || purego

package kernels

// Without assembly the five-bit products are the pure-Go twins.

func matmulQ5_0(j *matmulJob, r0, r1 int)                          { matmulQ5_0Rows(j, r0, r1) }
func dotQ5_0(w []byte, xq []int8, xd []float32) float32            { return dotQ5_0Go(w, xq, xd) }
func dotQ5_1(w []byte, xq []int8, xd, xs []float32) float32        { return dotQ5_1Go(w, xq, xd, xs) }
func dotQ5K(w []byte, xq []int8, xd []float32, xs []int16) float32 { return dotQ5KGo(w, xq, xd, xs) }

func q5kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ5KGo)
}
