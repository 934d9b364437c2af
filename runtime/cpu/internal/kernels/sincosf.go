package kernels

import "math"

// Sincosf returns sinf(x) and cosf(x) as glibc 2.36's x86-64 libm computes
// them (sysdeps/ieee754/flt-32/s_sinf.c and s_cosf.c, the FMA variants the
// library picks on CPUs with FMA): the argument in float64, reduced by
// multiples of pi/2 below 120 in magnitude, a float64 polynomial with fused
// multiply-adds, rounded to float32 last. llama.cpp's rope takes its
// rotation angles from cosf/sinf, which are not correctly rounded: a
// correctly rounded cos differs in the last bit for some angles (position
// 30 of a 64-wide head, for one), which rounding the query to F16 can turn
// into a whole F16 step. From 120 on the argument is reduced with 4/pi's
// bits in fixed point, as glibc does. Inf and NaN give NaN (glibc also
// sets errno for Inf).
func Sincosf(x float32) (sin, cos float32) {
	top := math.Float32bits(x) >> 20 & 0x7ff
	switch {
	case top < sincosfTop12(0x1.921FB6p-1): // |x| < pi/4
		xd := float64(x)
		x2 := xd * xd
		if top < sincosfTop12(0x1p-12) {
			return x, 1
		}
		return sinfPoly(xd, x2, &sincosfTable[0], 0), sinfPoly(xd, x2, &sincosfTable[0], 1)
	case top < sincosfTop12(120):
		xd, n := sincosfReduce(float64(x))
		p := &sincosfTable[0]
		s := p.sign[n&3]
		if n&2 != 0 {
			p = &sincosfTable[1]
		}
		return sinfPoly(xd*s, xd*xd, p, n), sinfPoly(xd*s, xd*xd, p, n^1)
	case top < sincosfTop12(float32(math.Inf(1))):
		xi := math.Float32bits(x)
		sign := int(xi >> 31)
		xd, n := sincosfReduceLarge(xi)
		p := &sincosfTable[0]
		s := p.sign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTable[1]
		}
		return sinfPoly(xd*s, xd*xd, p, n), sinfPoly(xd*s, xd*xd, p, n^1)
	default: // Inf, NaN
		nan := float32(math.NaN())
		return nan, nan
	}
}

// sincosfInvPio4 is glibc's __inv_pio4: 4/pi's bits, each entry a window
// one byte further on.
var sincosfInvPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// sincosfReduceLarge is glibc's reduce_large for |x| >= 120: x times 4/pi
// in fixed point from the bits of x, n the nearest multiple of pi/2 (mod
// 4), the remainder times pi/2^63.
func sincosfReduceLarge(xi uint32) (float64, int) {
	arr := sincosfInvPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921FB54442D18p-62, int(n)
}

func sincosfTop12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

type sincosfConsts struct {
	sign                           [4]float64
	hpiInv, hpi                    float64
	c0, c1, c2, c3, c4, s1, s2, s3 float64
}

// sincosfTable is glibc's __sincosf_table: the second entry has the cosine
// coefficients negated, for quadrants 2 and 3.
var sincosfTable = [2]sincosfConsts{
	{
		sign:   [4]float64{1, -1, -1, 1},
		hpiInv: 0x1.45F306DC9C883p+23, hpi: 0x1.921FB54442D18p0,
		c0: 0x1p0, c1: -0x1.ffffffd0c621cp-2, c2: 0x1.55553e1068f19p-5, c3: -0x1.6c087e89a359dp-10, c4: 0x1.99343027bf8c3p-16,
		s1: -0x1.555545995a603p-3, s2: 0x1.1107605230bc4p-7, s3: -0x1.994eb3774cf24p-13,
	},
	{
		sign:   [4]float64{1, -1, -1, 1},
		hpiInv: 0x1.45F306DC9C883p+23, hpi: 0x1.921FB54442D18p0,
		c0: -0x1p0, c1: 0x1.ffffffd0c621cp-2, c2: -0x1.55553e1068f19p-5, c3: 0x1.6c087e89a359dp-10, c4: -0x1.99343027bf8c3p-16,
		s1: -0x1.555545995a603p-3, s2: 0x1.1107605230bc4p-7, s3: -0x1.994eb3774cf24p-13,
	},
}

// sincosfReduce is glibc's reduce_fast without rounding intrinsics: n is
// x*2/pi rounded through a fixed-point integer, the result x - n*pi/2.
func sincosfReduce(x float64) (float64, int) {
	r := x * sincosfTable[0].hpiInv
	n := (int32(r) + 0x800000) >> 24
	return math.FMA(-float64(n), sincosfTable[0].hpi, x), int(n)
}

// sinfPoly is glibc's sinf_poly: the sine polynomial for even n, the
// cosine one for odd n.
func sinfPoly(x, x2 float64, p *sincosfConsts, n int) float32 {
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := math.FMA(x3, p.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return float32(math.FMA(x6, c2, c))
}
