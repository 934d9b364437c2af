//go:build amd64 && !purego

package kernels

// maxAVX returns the largest element of x[:len(x)&^31] that is not NaN,
// -Inf when there is none.
//
//go:noescape
func maxAVX(x []float32) float32

// indexAVX returns the first i < len(x)&^7 with x[i] == v, or -1.
//
//go:noescape
func indexAVX(x []float32, v float32) int

// argmax is Argmax for x[0] not NaN: the largest non-NaN element, then
// the first index holding it (a value equal to it, so ±0 tie as in the
// scalar loop).
func argmax(x []float32) int {
	if !haveAsm || len(x) < 64 {
		return argmaxGo(x)
	}
	m := x[0]
	n32 := len(x) &^ 31
	m = max(m, maxAVX(x[:n32])) // neither is NaN
	for _, v := range x[n32:] {
		if v > m {
			m = v
		}
	}
	n8 := len(x) &^ 7
	if i := indexAVX(x[:n8], m); i >= 0 {
		return i
	}
	for i := n8; i < len(x); i++ {
		if x[i] == m {
			return i
		}
	}
	return 0 // unreachable: m is an element of x
}
