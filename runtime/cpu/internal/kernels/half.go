package kernels

import "math"

// F16ToF32 converts an IEEE 754 half-precision value to float32 exactly,
// including subnormals, infinities and NaN payloads.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // inf or NaN: keep the payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: mant * 2^-24, normal as a float32. Shift the leading
	// one up to bit 10 and lower the exponent by the same amount.
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// F32ToF16 converts a float32 to IEEE 754 half precision with round to
// nearest even; values beyond the half range become infinities, tiny values
// become subnormals or zero, and NaN stays NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			// Keep the top of the payload; a payload that lives only in the
			// dropped bits must still read as NaN.
			m := uint16(mant >> 13)
			if m == 0 {
				m = 0x200
			}
			return sign | 0x7c00 | m
		}
		return sign | 0x7c00
	}
	e := exp - 112 // half exponent field
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal (or zero) half: the value is M * 2^(e-14-10) with the
		// implicit one made explicit, so the half mantissa is M >> (14-e).
		shift := uint(14 - e)
		if shift > 24 {
			return sign
		}
		m := mant | 0x800000
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++ // may carry into the smallest normal, which is the right bit pattern
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent rounds up to the next binade or to inf
	}
	return sign | uint16(h)
}

// BF16ToF32 converts a bfloat16 value to float32 (exact: bfloat16 is the top
// half of a float32).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts a float32 to bfloat16 with round to nearest even; NaN
// stays NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
