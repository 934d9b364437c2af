//go:build amd64 && !purego

package kernels

//go:noescape
func addAVX(dst, x []float32)

// addF32 adds x to dst (len(dst) == len(x)), eight lanes at a time: the
// same float32 sums as one at a time.
func addF32(dst, x []float32) {
	n8 := 0
	if haveAsm {
		n8 = len(x) &^ 7
	}
	if n8 > 0 {
		addAVX(dst[:n8], x[:n8])
	}
	addGo(dst[n8:], x[n8:])
}
