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
func RoundF16(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16ToF32(F32ToF16(v))
	}
}

// KeyScoresF16 writes dst[j] = keys[j*hd:(j+1)*hd] · q for every row j of
// keys (len(dst) rows), q rounded to F16 already (RoundF16). batch is the
// number of tokens in the forward pass: it picks ggml's order.
func KeyScoresF16(dst, q []float32, keys []uint16, hd, batch int) {
	dot := dotF16VecGo
	if f16Gemm(PaddedKV(len(dst)-1), hd, batch) {
		dot = dotF16GemmGo
	}
	q = q[:hd]
	for j := range dst {
		dst[j] = dot(keys[j*hd:(j+1)*hd], q)
	}
}

// SoftmaxGGML turns x[:n] into ggml's soft_max_ext(x, mask, scale) over
// nkv cells, x[n:nkv] being the masked ones (-inf): it scales x[:n] by
// scale in place, and writes the probabilities of all nkv cells into
// x[:nkv] (zero for the masked cells). len(x) must be at least nkv.
func SoftmaxGGML(x []float32, n, nkv int, scale float32) {
	x = x[:nkv]
	mx := float32(math.Inf(-1))
	for i := range n {
		x[i] *= scale
		mx = max(mx, x[i])
	}
	ninf := float32(math.Inf(-1))
	for i := n; i < nkv; i++ {
		x[i] = ninf
	}
	var sum float64
	i := 0
	for ; i+16 <= nkv; i += 16 {
		var lanes [16]float32
		for l := range lanes {
			lanes[l] = expGGML(x[i+l] - mx)
			x[i+l] = lanes[l]
		}
		sum += float64(reduce16(&lanes))
	}
	for ; i < nkv; i++ {
		// ggml's scalar tail calls libm's expf; n_kv is a multiple of 32
		// in attention, so this runs only for other callers.
		v := float32(math.Exp(float64(x[i] - mx)))
		x[i] = v
		sum += float64(v)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// ValuesF16 writes out[d] = vT[d*stride : d*stride+n] · p for every d <
// len(out): the product of the transposed value cache (row d holds head
// dimension d of every cell, rows stride cells apart) with the F16-rounded
// probabilities p of cells [0,n). The cells [n,nkv) have probability zero
// and are not read, but they count for ggml's order: its dot runs over
// nkv cells. batch is the number of tokens in the forward pass.
func ValuesF16(out, p []float32, vT []uint16, stride, n, nkv, batch int) {
	gemm := f16Gemm(len(out), nkv, batch)
	p = p[:n]
	for d := range out {
		row := vT[d*stride : d*stride+n]
		if gemm {
			out[d] = dotF16GemmPadded(row, p)
		} else {
			out[d] = dotF16VecPadded(row, p, nkv)
		}
	}
}

// dotF16GemmPadded is tinyBLAS's 16-lane order over a multiple of 16
// elements of which only the first len(w) can be nonzero (the lanes past
// len(w) add zeros, which change no sum).
func dotF16GemmPadded(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	var acc [f16GemmLanes]float32
	i := 0
	for ; i+f16GemmLanes <= n; i += f16GemmLanes {
		wi, xi := w[i:i+f16GemmLanes], x[i:i+f16GemmLanes]
		for l := range acc {
			acc[l] += float32(F16ToF32(wi[l]) * xi[l])
		}
	}
	for l := 0; i+l < n; l++ {
		acc[l] += float32(F16ToF32(w[i+l]) * x[i+l])
	}
	return reduce16(&acc)
}

// dotF16VecPadded is ggml_vec_dot_f16 over nkv elements of which only the
// first len(w) can be nonzero: its 64-lane part covers nkv&^63 elements
// and the rest is added one by one in float64.
func dotF16VecPadded(w []uint16, x []float32, nkv int) float32 {
	n := len(w)
	np := min(nkv&^(f16VecLanes-1), n)
	var s float64
	if nkv >= f16VecLanes {
		var acc [f16VecLanes]float32
		i := 0
		for ; i+f16VecLanes <= np; i += f16VecLanes {
			wi, xi := w[i:i+f16VecLanes], x[i:i+f16VecLanes]
			for l := range acc {
				acc[l] += float32(F16ToF32(wi[l]) * xi[l])
			}
		}
		// A partial group: the lanes past n add zeros, which change no sum.
		for l := 0; i+l < np; l++ {
			acc[l] += float32(F16ToF32(w[i+l]) * x[i+l])
		}
		s = float64(f16Fold64(&acc))
	}
	for i := nkv &^ (f16VecLanes - 1); i < n; i++ {
		s += float64(float32(F16ToF32(w[i]) * x[i]))
	}
	return float32(s)
}

// expGGML is ggml_v_expf (AVX-512) on one lane: exp(x) to within about
// 1.5 ulp, bit for bit what ggml's softmax computes, fused multiply-adds
// included.
func expGGML(x float32) float32 {
	const r = 0x1.8p23
	z := fma32Once(x, 0x1.715476p+0, r)
	n := z - r
	if math.Abs(float64(n)) > 192 || n != n {
		if n <= 0 {
			return 0
		}
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
