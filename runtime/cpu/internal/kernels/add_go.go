//go:build !amd64 || purego

package kernels

func addF32(dst, x []float32) { addGo(dst, x) }
