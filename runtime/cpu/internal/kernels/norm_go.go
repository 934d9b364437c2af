//go:build !amd64 || purego

package kernels

// scaleMul sets dst[i] = x[i]*a*w[i] for i < len(x).
func scaleMul(dst, x, w []float32, a float32) { scaleMulGo(dst, x, w, a) }
