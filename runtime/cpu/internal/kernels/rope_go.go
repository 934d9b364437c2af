//go:build !amd64 || purego

package kernels

func ropePairs(v, cos, sin []float32)       { ropePairsGo(v, cos, sin) }
func ropeHalves(lo, hi, cos, sin []float32) { ropeHalvesGo(lo, hi, cos, sin) }
