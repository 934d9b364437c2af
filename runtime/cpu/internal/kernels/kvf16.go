package kernels

import "math"

// Attention over a half-precision (F16) key/value cache in the order of
// ggml's CPU backend (llama.cpp b4747, flash attention off, this AVX-512
// build), llama.cpp's default cache type. Its attention is two matrix
// products and a softmax:
//
//   - K·q: ggml converts the query to F16 (the vec_dot type of an F16
//     matrix) and takes each cached key row's dot product with it, in
//     ggml_vec_dot_f16's 64-lane order for one token and tinyBLAS's
//     16-lane order for batches of two or more (f16order.go);
//   - softmax over n_kv scores, the number of cache cells padded to 32,
//     the cells past the token's own position masked with -inf: the
//     scores scaled, exponentials by ggml_v_expf sixteen at a time, each
//     group of sixteen summed as _mm512_reduce_add_ps does and added in
//     float64, the probabilities multiplied by the float32 reciprocal;
//   - V·p: the probabilities converted to F16 and each row of the
//     transposed value cache (one head dimension over all cells) dotted
//     with them, over n_kv cells, in the same two orders.
//
// Every product of two F16 values is exact in float32, so with the same
// roundings (query and probabilities to F16, keys and values stored as
// F16) only the order of additions decides the result, and this file
// follows ggml's. The padding matters: it decides which cells fall in the
// 64-lane part of ggml_vec_dot_f16 and which in its float64 tail.

// KVPad is the granularity of llama.cpp's n_kv without flash attention:
// attention runs over the cache cells up to the last used one, rounded up
// to a multiple of 32.
const KVPad = 32

// PaddedKV is llama.cpp's n_kv for a batch whose furthest position is
// last (0-based).
func PaddedKV(last int) int { return max(KVPad, (last+KVPad)/KVPad*KVPad) }

// RoundF16 rounds src to half precision into dst (as float32 values, so
// that the dot kernels multiply them exactly): ggml's conversion of an
// F32 operand to the F16 vec_dot type.
func RoundF16(dst, src []float32) { roundToF16(dst[:len(src)], src) }

// KeyScoresF16 writes dst[j] = keys[j*hd:(j+1)*hd] · q for every row j of
// keys (len(dst) rows), q rounded to F16 already (RoundF16). batch is the
// number of tokens in the forward pass: it picks ggml's order (hd rows of
// the key view are n_kv long, a multiple of 4, so only batch and hd
// decide).
//
// next, if not nil, is the keys the caller scores next: the batched order's
// kernel prefetches its first tiles as this call ends (a head's keys are
// a few tiles; each call would otherwise start with cold loads).
func KeyScoresF16(dst, q []float32, keys []uint16, hd, batch int, next []uint16) {
	keyScoresF16(dst, q[:hd], keys[:len(dst)*hd], hd, f16Gemm(KVPad, hd, batch), next)
}

// SoftmaxGGML turns x[:n] into ggml's soft_max_ext(x, mask, scale) over
// nkv cells, x[n:nkv] being the masked ones (-inf): it scales x[:n] by
// scale in place, and writes the probabilities of all nkv cells into
// x[:nkv] (zero for the masked cells). len(x) must be at least nkv.
func SoftmaxGGML(x []float32, n, nkv int, scale float32) {
	x = x[:nkv]
	mx := scaleMax(x[:n], scale)
	ninf := float32(math.Inf(-1))
	n16 := nkv &^ 15
	// Only the groups of 16 that hold attended cells are exponentiated. A
	// masked cell's exponential is +0, a group of them sums to +0, and
	// adding +0 leaves the float64 sum (never -0) as it was, so the
	// masked groups are written as zeros without changing a bit; in a
	// prompt chunk they are about half of n_kv.
	e16 := min(n16, (n+15)&^15)
	for i := n; i < e16; i++ {
		x[i] = ninf
	}
	sum := expSumGGML(x[:e16], mx)
	clear(x[e16:n16])
	for i := n16; i < nkv; i++ {
		// ggml's scalar tail calls libm's expf; n_kv is a multiple of 32
		// in attention, so this runs only for other callers.
		if i >= n {
			x[i] = 0
			continue
		}
		v := float32(math.Exp(float64(x[i] - mx)))
		x[i] = v
		sum += float64(v)
	}
	// The masked probabilities are +0 already, as ggml's 0·(1/sum).
	scaleF32(x[:n], float32(1/sum))
}

// scaleMaxGo multiplies x by scale in place and returns the largest
// product, or mx if that is larger.
func scaleMaxGo(x []float32, scale, mx float32) float32 {
	for i := range x {
		x[i] *= scale
		mx = max(mx, x[i])
	}
	return mx
}

// ValuesF16 writes out[d] = vT[d*stride : d*stride+nkv] · p[:nkv] for
// every d < len(out): the product of the transposed value cache (row d
// holds head dimension d of every cell, rows stride cells apart) with the
// F16-rounded probabilities, over nkv cells in ggml's order, the cells
// from n on being masked (probability +0). batch is the number of tokens
// in the forward pass. next, if not nil, is the transposed values the
// caller reads next, rows stride apart as here: the batched order's
// kernel prefetches its first rows as this call ends.
//
// The masked cells are skipped where ggml's order lets that change no bit
// (valueCells): their products are ±0 (for finite values, as everything
// F32ToF16 stores from finite activations below 65504 is), and adding ±0
// leaves any accumulator that is not -0 unchanged. No accumulator is ever
// -0: each starts at +0, and a sum is -0 only when both addends are (an
// exact cancellation gives +0). In a prompt chunk each token attends to
// its own prefix but n_kv covers the whole chunk, so this halves the
// value work there.
func ValuesF16(out, p []float32, vT []uint16, stride, n, nkv, batch int, next []uint16) {
	if len(out) == 0 {
		return
	}
	gemm := f16Gemm(len(out), nkv, batch)
	cells := valueCells(n, nkv, gemm)
	valuesF16(out, p[:cells], vT[:(len(out)-1)*stride+cells], stride, gemm, next)
}

// valueCells is how many of nkv cells, the first n attended, the value
// product must visit to add what ggml's does. tinyBLAS (gemm) gives cell c
// to lane c%16 of one float32 sum, so whole groups of 16 masked cells add
// nothing. ggml_vec_dot_f16 sums the first nkv&^63 cells in 64 float32
// lanes and the rest one by one in float64: if the attended cells end
// within the 64-lane part, the masked groups of 64 after them and the
// masked float64 tail add nothing; otherwise all nkv cells keep the split.
func valueCells(n, nkv int, gemm bool) int {
	if gemm {
		return min(nkv, (n+f16GemmLanes-1)/f16GemmLanes*f16GemmLanes)
	}
	if c := (n + f16VecLanes - 1) / f16VecLanes * f16VecLanes; c <= nkv&^(f16VecLanes-1) {
		return c
	}
	return nkv
}

func keyScoresF16Go(dst, q []float32, keys []uint16, hd int, gemm bool) {
	dot := dotF16VecGo
	if gemm {
		dot = dotF16GemmGo
	}
	for j := range dst {
		dst[j] = dot(keys[j*hd:(j+1)*hd], q)
	}
}

func valuesF16Go(out, p []float32, vT []uint16, stride int, gemm bool) {
	dot := dotF16VecGo
	if gemm {
		dot = dotF16GemmGo
	}
	nkv := len(p)
	for d := range out {
		out[d] = dot(vT[d*stride:d*stride+nkv], p)
	}
}

// expSumGGMLGo replaces x with exp(x-m) (expGGML) and returns
// ggml_vec_soft_max_f32's sum: each 16 lanes reduced as
// _mm512_reduce_add_ps does, those sums added in float64. len(x) must be a
// multiple of 16.
func expSumGGMLGo(x []float32, m float32) float64 {
	var sum float64
	for i := 0; i+16 <= len(x); i += 16 {
		var lanes [16]float32
		for l := range lanes {
			lanes[l] = expGGML(x[i+l] - m)
			x[i+l] = lanes[l]
		}
		sum += float64(reduce16(&lanes))
	}
	return sum
}

// expGGML is ggml_v_expf (AVX-512) on one lane: exp(x) to within about
// 1.5 ulp, bit for bit what ggml's softmax computes, fused multiply-adds
// included, for every x whose power of two n is at least -126 (x above
// about -87.3). Below that ggml gives values under 2^-125 (zero from
// n < -192); we give zero, as the AVX2 assembly does (it has no
// VSCALEFPS). In the softmax this changes nothing: the largest score
// contributes exactly 1 to a float64 sum that cannot see 2^-125, and a
// probability that small rounds to zero in F16 either way.
func expGGML(x float32) float32 {
	const r = 0x1.8p23
	z := fma32Once(x, 0x1.715476p+0, r)
	n := z - r
	if n < -126 || n != n {
		return 0
	}
	if n > 192 {
		return float32(math.Inf(1))
	}
	b := fma32Once(-n, 0x1.7f7d1cp-20, fma32Once(-n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32Once(
		fma32Once(fma32Once(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32Once(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u,
		fma32Once(0x1.ffffecp-1, b, 1))
	// _mm512_scalef_ps: j·2^n, rounded once (n is a whole number here).
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

// fma32Once is a float32 fused multiply-add with one rounding, as VFMADD*PS
// does. The product of two float32 values is exact in float64; the sum is
// rounded to float64 and then to float32, which rounds twice only when
// the float64 sum lies exactly halfway between two float32 values and was
// itself inexact: then the exact error term decides.
func fma32Once(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	bits := math.Float64bits(s)
	const dropped = 1<<29 - 1 // float64 fraction bits a float32 drops
	if bits&dropped != 1<<28 || math.IsInf(s, 0) || math.Abs(s) < 0x1p-126 {
		return r
	}
	// TwoSum: the exact error of s = p + c.
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	if e == 0 {
		return r
	}
	trunc := float32(math.Float64frombits(bits &^ dropped))
	if (e > 0) == (s > 0) {
		return math.Nextafter32(trunc, float32(math.Copysign(math.Inf(1), s)))
	}
	return trunc
}
