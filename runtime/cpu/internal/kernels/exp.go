package kernels

import "math"

// A float32 exp for the activation functions and softmax: Cody-Waite range
// reduction by ln 2 and a degree-6 polynomial (Cephes' expf coefficients),
// within about 2 ulp of the true value; the assembly evaluates the same
// steps eight lanes at a time. Inputs are clamped to [expMin, expMax] so the
// result is always a finite normal number.
const (
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375
	expLn2Lo = -2.12194440e-4
	expMax   = 88.0
	expMin   = -87.0
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

func expf(x float32) float32 {
	x = min(max(x, expMin), expMax)
	n := float32(math.Floor(float64(x*expLog2e + 0.5)))
	r := x - n*expLn2Hi
	r -= n * expLn2Lo
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	y := p*r*r + r + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

func siluGo(x []float32) {
	for i, v := range x {
		x[i] = v / (1 + expf(-v))
	}
}

func swigluGo(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = g / (1 + expf(-g)) * up[i]
	}
}

// expSubGo replaces x with exp(x-m) and returns the sum.
func expSubGo(x []float32, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := expf(v - m)
		x[i] = e
		sum += e
	}
	return sum
}
