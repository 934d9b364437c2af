//go:build amd64 && !purego

package kernels

//go:noescape
func scaleMulAVX(dst, x, w []float32, a float32)

// scaleMul sets dst[i] = x[i]*a*w[i] for i < len(x).
func scaleMul(dst, x, w []float32, a float32) {
	n8 := 0
	if haveAsm {
		n8 = len(x) &^ 7
	}
	if n8 > 0 {
		scaleMulAVX(dst[:n8], x[:n8], w[:n8], a)
	}
	scaleMulGo(dst[n8:], x[n8:], w[n8:], a)
}
