//go:build amd64 && !purego

package kernels

//go:noescape
func ropePairsAVX(v, cos, sin []float32)

//go:noescape
func ropeHalvesAVX(lo, hi, cos, sin []float32)

// The assembly does RopePair's arithmetic four pairs at a time in float64
// lanes (VFMADD/VFMSUB231PD, then one rounding to float32), so its results
// are RopePair's bits.

func ropePairs(v, cos, sin []float32) {
	n4 := 0
	if haveAsm {
		n4 = len(cos) &^ 3
	}
	if n4 > 0 {
		ropePairsAVX(v[:2*n4], cos[:n4], sin[:n4])
	}
	ropePairsGo(v[2*n4:], cos[n4:], sin[n4:])
}

func ropeHalves(lo, hi, cos, sin []float32) {
	n4 := 0
	if haveAsm {
		n4 = len(cos) &^ 3
	}
	if n4 > 0 {
		ropeHalvesAVX(lo[:n4], hi[:n4], cos[:n4], sin[:n4])
	}
	ropeHalvesGo(lo[n4:], hi[n4:], cos[n4:], sin[n4:])
}
