package pyrand

// GetRandBits128 is random.getrandbits(128), as the high and low 64 bits:
// CPython fills the number from 32-bit draws, least significant word
// first (Modules/_randommodule.c, _random_Random_getrandbits_impl).
func (r *Rand) GetRandBits128() (hi, lo uint64) {
	var w [4]uint64
	for i := range w {
		w[i] = uint64(r.Uint32())
	}
	return w[3]<<32 | w[2], w[1]<<32 | w[0]
}

// RandInt is random.randint(a, b): randrange(a, b+1), which is
// a + _randbelow(b-a+1). The width b-a+1 must be in [1, 2^32).
func (r *Rand) RandInt(a, b int) int {
	return a + int(r.Below(uint32(b-a+1)))
}
