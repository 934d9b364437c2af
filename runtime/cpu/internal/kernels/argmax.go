package kernels

// Argmax returns the index of the first largest element of x: what the
// scalar loop
//
//	best := 0
//	for i, v := range x { if v > x[best] { best = i } }
//
// returns, NaNs included (a NaN is never chosen unless x[0] is one, which
// then stays the answer; +0 and -0 tie). Greedy decoding calls it once per
// token over the whole vocabulary; the scalar loop cost ~35 µs for 32,000
// logits, about 5% of a 24m batched decode step.
func Argmax(x []float32) int {
	if len(x) == 0 || x[0] != x[0] {
		return 0
	}
	return argmax(x)
}

// argmaxGo is the scalar loop of Argmax's comment.
func argmaxGo(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
