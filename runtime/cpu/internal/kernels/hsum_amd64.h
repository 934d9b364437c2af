// The horizontal sums that end the float kernels' accumulations, one macro
// per order of additions (float addition does not associate, and each
// kernel must add in the order of the ggml code it reproduces, so the
// orders are kept apart even where two give the same value). Included at
// the top of every .s file that uses one, before its first TEXT (go vet's
// asmdecl check wants the macros defined there). In every macro x is the
// low (X) half of the Y register y, and tmp a scratch X register.

// HALVES8TO adds the high half of y onto its low half x, lane l+4 onto
// lane l, into dst.
#define HALVES8TO(y, x, tmp, dst) \
	VEXTRACTF128 $1, y, tmp; \
	VADDPS tmp, x, dst

// HADD4 leaves (x0+x1)+(x2+x3) in every lane of x.
#define HADD4(x) \
	VHADDPS x, x, x; \
	VHADDPS x, x, x

// HADDSUM8 sums y's eight lanes into every lane of x: halves, then
// pairs (0+1, 2+3) and those two with VHADDPS (the F32, Q4_0 and Q8_0 dot
// products and the softmax sum).
#define HADDSUM8(y, x, tmp) \
	HALVES8TO(y, x, tmp, x); \
	HADD4(x)

// HADDSUM32 sums the 32 lanes of a, b, c and d into every lane of xa (a's
// low half): lane-wise (a+b)+(c+d), then HADDSUM8.
#define HADDSUM32(a, b, c, d, xa, tmp) \
	VADDPS b, a, a; \
	VADDPS d, c, c; \
	VADDPS c, a, a; \
	HADDSUM8(a, xa, tmp)

// HADDSUBSUM8 is HADDSUM8 with the four lanes of sub subtracted after the
// halves are added (Q4_K: the scales' sum less the mins' part).
#define HADDSUBSUM8(y, x, sub, tmp) \
	HALVES8TO(y, x, tmp, x); \
	VSUBPS sub, x, x; \
	HADD4(x)

// HSUM8 leaves the sum of y's eight lanes in the low lane of x in ggml's
// hsum_float_8 order: halves, then pairs (0+2, 1+3), then those two.
#define HSUM8(y, x, tmp) \
	HALVES8TO(y, x, tmp, x); \
	VMOVHLPS x, x, tmp; \
	VADDPS tmp, x, x; \
	VMOVSHDUP x, tmp; \
	VADDSS tmp, x, x

// REDUCE16 sums 16 lanes, lanes 0-7 in ylo and 8-15 in yhi, the way GCC's
// _mm512_reduce_add_ps does: 8+8, 4+4, lanes 2,3 onto 0,1, lane 1 onto 0.
// The sum ends in the low lane of xlo (ylo's low half); yhi is clobbered
// and xhi (yhi's low half) is the scratch. After the 8+8 this adds in
// HSUM8's order, with VPERMILPS where HSUM8 has VMOVHLPS: kept apart so
// that the kernels' machine code stays what it was measured as.
#define REDUCE16(ylo, yhi, xlo, xhi) \
	VADDPS yhi, ylo, ylo; \
	HALVES8TO(ylo, xlo, xhi, xlo); \
	VPERMILPS $0x4E, xlo, xhi; \
	VADDPS xhi, xlo, xlo; \
	VMOVSHDUP xlo, xhi; \
	VADDSS xhi, xlo, xlo

// VEC64FOLD folds the 64 lanes of ggml's GGML_F32_STEP-64 accumulators,
// lanes 0-7, ..., 56-63 in Y0..Y7, into 16 in Y0 and Y1 as
// GGML_F32x16_REDUCE does: lane l+32 onto l, then l+16 onto l, that is
// ((l + l+32) + (l+16 + l+48)).
#define VEC64FOLD \
	VADDPS Y4, Y0, Y0; \
	VADDPS Y5, Y1, Y1; \
	VADDPS Y6, Y2, Y2; \
	VADDPS Y7, Y3, Y3; \
	VADDPS Y2, Y0, Y0; \
	VADDPS Y3, Y1, Y1

// REDUCE64 sums those 64 lanes to the low lane of X0 as ggml's AVX-512
// build of ggml_vec_dot_f32/f16 does: VEC64FOLD, then the 16 lanes left as
// _mm512_reduce_add_ps (REDUCE16). X1 is clobbered.
#define REDUCE64 \
	VEC64FOLD; \
	REDUCE16(Y0, Y1, X0, X1)

// HADDROWS4 sums the eight lanes of each of a, b, c and d pairwise with
// VHADDPS into a: [a b c d | the same of the upper halves], each lane the
// sum (l0+l1)+(l2+l3) of one vector's half.
#define HADDROWS4(a, b, c, d) \
	VHADDPS b, a, a; \
	VHADDPS d, c, c; \
	VHADDPS c, a, a

// HSUMROWS4 leaves in xa (a's low half) the four sums of the eight lanes of
// a, b, c and d: HADDROWS4, then the upper halves added onto the lower.
#define HSUMROWS4(a, b, c, d, xa, tmp) \
	HADDROWS4(a, b, c, d); \
	HALVES8TO(a, xa, tmp, xa)

// REDUCE16Z is REDUCE16's order for the 16 lanes of one Z register, zreg,
// in AVX-512's encodings (the generated 512-bit tiles): the sum ends in the
// low lane of xlo; ylo/xlo are zreg's low halves, yhi/xhi a scratch
// register's.
#define REDUCE16Z(zreg, ylo, xlo, yhi, xhi) \
	VEXTRACTF64X4 $1, zreg, yhi; \
	VADDPS yhi, ylo, ylo; \
	VEXTRACTF32X4 $1, ylo, xhi; \
	VADDPS xhi, xlo, xlo; \
	VPERMILPS $0x4E, xlo, xhi; \
	VADDPS xhi, xlo, xlo; \
	VMOVSHDUP xlo, xhi; \
	VADDSS xhi, xlo, xlo

// CLEARY0Y7 zeroes the eight accumulators Y0..Y7 that the row kernels
// (F32, F16, BF16, Q4_0, Q5, Q8_0) fill before one of the sums above.
#define CLEARY0Y7 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7
