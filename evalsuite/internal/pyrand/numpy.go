package pyrand

import "math/bits"

// Random is random.random(): 53 random bits from two draws, a/2^53.
func (r *Rand) Random() float64 {
	a, b := r.Uint32()>>5, r.Uint32()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// Choices is random.choices(range(n), k=k) without weights: each index
// is floor(random() * n).
func (r *Rand) Choices(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = int(r.Random() * float64(n))
	}
	return out
}

// NewNumpyLegacy returns the generator behind numpy's legacy global
// state after np.random.seed(seed): the same MT19937, seeded by
// init_genrand(seed) alone (numpy's mt19937_seed), not init_by_array.
func NewNumpyLegacy(seed uint32) *Rand {
	r := &Rand{}
	r.initGenrand(seed)
	return r
}

// NumpyRandInt is the legacy np.random.randint(low, high) for a range
// that fits 32 bits: low plus a draw masked to the range's bit width,
// redrawn while above it (numpy's buffered_bounded_masked_uint32).
func (r *Rand) NumpyRandInt(low, high int) int {
	rng := uint32(high - 1 - low)
	if rng == 0 {
		return low
	}
	mask := uint32(1)<<bits.Len32(rng) - 1
	v := r.Uint32() & mask
	for v > rng {
		v = r.Uint32() & mask
	}
	return low + int(v)
}
