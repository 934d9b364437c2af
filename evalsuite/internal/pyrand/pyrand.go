// Package pyrand reproduces the parts of CPython's random module that
// lm-evaluation-harness task files rely on: the MT19937 generator seeded the
// way random.seed(int) seeds it, getrandbits, _randbelow and shuffle. With
// it, a task that shuffles answer choices through Python's random module
// yields the same permutations here as in Python for the same seed and the
// same sequence of calls.
//
// The algorithms follow CPython's Modules/_randommodule.c (init_by_array,
// genrand_uint32) and Lib/random.py (_randbelow_with_getrandbits, shuffle)
// for Python 3.2 and later; the tests compare against outputs recorded from
// CPython 3.11.
package pyrand

import "math/bits"

const (
	stateSize   = 624
	shiftSize   = 397
	matrixA     = 0x9908b0df
	upperMask   = 0x80000000
	lowerMask   = 0x7fffffff
	initialSeed = 19650218
)

// Rand is one MT19937 generator, the state behind a Python random.Random.
// It is not safe for concurrent use.
type Rand struct {
	mt  [stateSize]uint32
	mti int
}

// New returns a generator seeded as Python's random.Random(seed) is for an
// integer seed: the absolute value split into 32-bit words, least
// significant first, fed to init_by_array.
func New(seed int64) *Rand {
	n := uint64(seed)
	if seed < 0 {
		n = uint64(-seed) // two's complement negation is exact for MinInt64 as well
	}
	key := []uint32{uint32(n)}
	if hi := uint32(n >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &Rand{}
	r.initByArray(key)
	return r
}

func (r *Rand) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < stateSize; i++ {
		prev := r.mt[i-1]
		r.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.mti = stateSize
}

func (r *Rand) initByArray(key []uint32) {
	r.initGenrand(initialSeed)
	i, j := 1, 0
	for k := max(stateSize, len(key)); k > 0; k-- {
		prev := r.mt[i-1]
		r.mt[i] = (r.mt[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= stateSize {
			r.mt[0] = r.mt[stateSize-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := stateSize - 1; k > 0; k-- {
		prev := r.mt[i-1]
		r.mt[i] = (r.mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= stateSize {
			r.mt[0] = r.mt[stateSize-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	r.mti = stateSize
}

// Uint32 is genrand_uint32: the next 32 random bits.
func (r *Rand) Uint32() uint32 {
	if r.mti >= stateSize {
		for k := 0; k < stateSize; k++ {
			y := (r.mt[k] & upperMask) | (r.mt[(k+1)%stateSize] & lowerMask)
			v := r.mt[(k+shiftSize)%stateSize] ^ (y >> 1)
			if y&1 != 0 {
				v ^= matrixA
			}
			r.mt[k] = v
		}
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// GetRandBits is random.getrandbits(k) for 0 <= k <= 32 (the range
// shuffle and randrange on small lists need); larger k panics, as it is a
// programming error here.
func (r *Rand) GetRandBits(k int) uint32 {
	if k < 0 || k > 32 {
		panic("pyrand: GetRandBits supports 0..32 bits")
	}
	if k == 0 {
		return 0
	}
	return r.Uint32() >> (32 - k)
}

// Below is random._randbelow(n) (the getrandbits variant): a uniform value
// in [0, n) by rejection sampling on n.bit_length() bits. n must be in
// [1, 2^32); Below(0) returns 0 as CPython does.
func (r *Rand) Below(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	k := bits.Len32(n)
	v := r.GetRandBits(k)
	for v >= n {
		v = r.GetRandBits(k)
	}
	return v
}

// Shuffle is random.shuffle on a list of n items: for i from n-1 down to
// 1 it swaps item i with item Below(i+1).
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := int(r.Below(uint32(i + 1)))
		swap(i, j)
	}
}

// Sample is random.sample(range(n), k): k distinct indices in selection
// order. Like CPython it picks from a shrinking pool when n is small next
// to k's set size and by rejection otherwise, so the indices and the
// generator state afterwards match Python's. It panics unless 0 <= k <= n
// (Python raises ValueError), which callers check first.
func (r *Rand) Sample(n, k int) []int {
	if k < 0 || k > n {
		panic("pyrand: Sample needs 0 <= k <= n")
	}
	setSize := 21
	if k > 5 {
		setSize += 1 << (2 * ceilLog4(k*3))
	}
	out := make([]int, k)
	if n <= setSize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := int(r.Below(uint32(n - i)))
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out
	}
	selected := make(map[int]bool, k)
	for i := 0; i < k; i++ {
		j := int(r.Below(uint32(n)))
		for selected[j] {
			j = int(r.Below(uint32(n)))
		}
		selected[j] = true
		out[i] = j
	}
	return out
}

// ceilLog4 is math.ceil(math.log(x, 4)) for x >= 1, computed exactly on
// integers (x is small; exact powers of four give their exponent).
func ceilLog4(x int) int {
	e, p := 0, 1
	for p < x {
		p *= 4
		e++
	}
	return e
}
