//go:build !amd64 || purego

package kernels

func argmax(x []float32) int { return argmaxGo(x) }
