//go:build amd64 && !purego

package kernels

//go:noescape
func q5_0DotAVX(w []byte, xq []int8, xd []float32) float32

//go:noescape
func q5_1DotAVX(w []byte, xq []int8, xd, xs []float32) float32

//go:noescape
func q5kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32

// dotQ5_0, dotQ5_1 and dotQ5K are the five-bit row dot products: AVX2
// where the CPU has it, the pure-Go twins otherwise.
func dotQ5_0(w []byte, xq []int8, xd []float32) float32 {
	if !haveAsm {
		return dotQ5_0Go(w, xq, xd)
	}
	return q5_0DotAVX(w, xq, xd)
}

func dotQ5_1(w []byte, xq []int8, xd, xs []float32) float32 {
	if !haveAsm {
		return dotQ5_1Go(w, xq, xd, xs)
	}
	return q5_1DotAVX(w, xq, xd, xs)
}

func dotQ5K(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	if !haveAsm {
		return dotQ5KGo(w, xq, xd, xs)
	}
	return q5kDotAVX(w, xq, xd, xs)
}
