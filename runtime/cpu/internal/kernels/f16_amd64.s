//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Half-precision weights are widened with VCVTPH2PS as they are loaded. The
// activations are F16 values too (rounded by roundF16AVX), so every product
// is exact in float32 and only the order of the additions matters: these
// kernels add in the order of ggml's AVX-512 build, which f16order.go
// describes and dotF16VecGo/dotF16GemmGo implement lane for lane.

// ggml_vec_dot_f16's 64 lanes, shared by the row kernels: Y0..Y7 hold lanes
// 0-7, ..., 56-63. VEC64STEP adds the 64 products of the weights at row+AX
// (F16, widened as loaded) and the activations at DI+2*AX; Y8..Y11 are
// clobbered. VEC64FOLD and REDUCE64 (hsum_amd64.h) end the sum.
#define VEC64STEP(row) \
	VCVTPH2PS (row)(AX*1), Y8; \
	VCVTPH2PS 16(row)(AX*1), Y9; \
	VCVTPH2PS 32(row)(AX*1), Y10; \
	VCVTPH2PS 48(row)(AX*1), Y11; \
	VFMADD231PS (DI)(AX*2), Y8, Y0; \
	VFMADD231PS 32(DI)(AX*2), Y9, Y1; \
	VFMADD231PS 64(DI)(AX*2), Y10, Y2; \
	VFMADD231PS 96(DI)(AX*2), Y11, Y3; \
	VCVTPH2PS 64(row)(AX*1), Y8; \
	VCVTPH2PS 80(row)(AX*1), Y9; \
	VCVTPH2PS 96(row)(AX*1), Y10; \
	VCVTPH2PS 112(row)(AX*1), Y11; \
	VFMADD231PS 128(DI)(AX*2), Y8, Y4; \
	VFMADD231PS 160(DI)(AX*2), Y9, Y5; \
	VFMADD231PS 192(DI)(AX*2), Y10, Y6; \
	VFMADD231PS 224(DI)(AX*2), Y11, Y7

// func f16DotVecAVX(w []uint16, x []float32) float32
// ggml_vec_dot_f16: 64 lanes over the first len(w)&^63 elements, folded and
// reduced to one float32, then the leftover products added one by one in
// float64 and the sum rounded to float32. Y0..Y7 hold lanes 0-7, ..., 56-63.
TEXT ·f16DotVecAVX(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), SI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	SHLQ $1, CX                // weight bytes; x offsets are twice the weight offsets
	MOVQ CX, DX
	ANDQ $-128, DX             // bytes of whole 64-element steps
	XORQ AX, AX
	CLEARY0Y7

hv64:
	CMPQ AX, DX
	JAE  hvsum
	VEC64STEP(SI)
	ADDQ $128, AX
	JMP  hv64

hvsum:
	REDUCE64
	VCVTSS2SD X0, X0, X0

hvtail:
	CMPQ AX, CX
	JAE  hvdone
	MOVWLZX (SI)(AX*1), R9
	VMOVD R9, X1
	VCVTPH2PS X1, X1
	VMULSS (DI)(AX*2), X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD X1, X0, X0
	ADDQ $2, AX
	JMP  hvtail

hvdone:
	VCVTSD2SS X0, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func f16DotVec4LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32)
// f16DotVecAVX for groups tiles of four rows, tile g's rows starting at
// w[g*gs] and ws apart, into out[4g:4g+4]: in each tile, the 64-lane parts
// one row after the other (each parked in out) with the leftovers summed
// vectorized where that is provably exact (see below); otherwise the four
// float64 leftover chains side by side, which hides the latency of their
// dependent additions. One call serves a whole weight matrix (decode) or
// a whole head of keys (attention), whose tiles are only a few steps.
TEXT ·f16DotVec4LoopAVX(SB), NOSPLIT, $16-104
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ gs+32(FP), AX
	SHLQ $1, AX
	MOVQ AX, 0(SP)             // tile stride in bytes
	MOVQ groups+40(FP), AX
	MOVQ AX, 8(SP)             // tiles left
	MOVQ x_base+48(FP), DI
	MOVQ n+72(FP), CX
	MOVQ out_base+80(FP), DX
	SHLQ $1, R8                // row stride in bytes
	SHLQ $1, CX                // n in weight bytes
	MOVQ CX, BX
	ANDQ $-128, BX             // bytes of whole 64-element steps

hvltile:
	CMPQ 8(SP), $0
	JE   hvlend
	XORQ R10, R10              // row
	XORQ R14, R14              // rows whose leftovers need the sequential loop
	MOVQ SI, R11               // row pointer

hvlrow:
	CLEARY0Y7
	XORQ AX, AX

hvlmain:
	CMPQ AX, BX
	JAE  hvlred
	VEC64STEP(R11)
	ADDQ $128, AX
	JMP  hvlmain

hvlred:
	REDUCE64
	VMOVSS X0, (DX)(R10*4)     // parked for the sequential leftovers

	// Fast leftovers. The float64 sum of the parked float32 sum s and the
	// leftover products (exact float32s) is exact in any order while every
	// partial sum fits 53 bits of the terms' common unit, and so equals the
	// sequential sum. Two sufficient tests on B = |s| + sum of |products|:
	// F16 products and their float32 sums are multiples of 2^-48, so
	// B < 32 = 2^(53-48) will do; and a float32 with biased exponent e is
	// a multiple of 2^(e-150), so with e the smallest exponent of a nonzero
	// term B < 2^(e-97) will do (no term is a float32 subnormal: F16
	// products are at least 2^-48). If neither holds (or on NaN) R14 flags
	// the tile for the sequential loop below.
	VMOVD X0, R12
	SHLL $1, R12
	SHRL $24, R12
	DECL R12                   // exponent of s minus 1; 0 wraps to the maximum
	VCVTSS2SD X0, X0, X0
	VXORPD Y2, Y2, Y2          // sum of products
	VXORPD Y3, Y3, Y3          // sum of |products|
	VPCMPEQQ Y5, Y5, Y5
	VPSRLQ $1, Y5, Y5          // |x| mask for float64
	VPCMPEQD Y4, Y4, Y4        // smallest exponent minus 1 of the products
	VPCMPEQD Y7, Y7, Y7        // -1 in every dword
	MOVQ BX, AX

hvlfast8:
	LEAQ 16(AX), R9
	CMPQ R9, CX
	JA   hvlfast1
	VCVTPH2PS (R11)(AX*1), Y8
	VMULPS (DI)(AX*2), Y8, Y8
	VPSLLD $1, Y8, Y11
	VPSRLD $24, Y11, Y11
	VPADDD Y7, Y11, Y11
	VPMINUD Y11, Y4, Y4
	VCVTPS2PD X8, Y9
	VEXTRACTF128 $1, Y8, X8
	VCVTPS2PD X8, Y10
	VADDPD Y9, Y2, Y2
	VADDPD Y10, Y2, Y2
	VANDPD Y5, Y9, Y9
	VANDPD Y5, Y10, Y10
	VADDPD Y9, Y3, Y3
	VADDPD Y10, Y3, Y3
	ADDQ $16, AX
	JMP  hvlfast8

hvlfast1:
	VEXTRACTF128 $1, Y2, X8
	VADDPD X8, X2, X2
	VPERMILPD $1, X2, X8
	VADDSD X8, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPD X8, X3, X3
	VPERMILPD $1, X3, X8
	VADDSD X8, X3, X3
	VEXTRACTI128 $1, Y4, X11
	VPMINUD X11, X4, X4
	VPSHUFD $0x4E, X4, X11
	VPMINUD X11, X4, X4
	VPSHUFD $0xB1, X4, X11
	VPMINUD X11, X4, X4

hvlfast1loop:
	CMPQ AX, CX
	JAE  hvlfastend
	MOVWLZX (R11)(AX*1), R9
	VMOVD R9, X8
	VCVTPH2PS X8, X8
	VMULSS (DI)(AX*2), X8, X8
	VPSLLD $1, X8, X11
	VPSRLD $24, X11, X11
	VPADDD X7, X11, X11
	VPMINUD X11, X4, X4
	VCVTSS2SD X8, X8, X8
	VADDSD X8, X2, X2
	VANDPD X5, X8, X8
	VADDSD X8, X3, X3
	ADDQ $2, AX
	JMP  hvlfast1loop

hvlfastend:
	VADDSD X0, X2, X2          // the total
	VANDPD X5, X0, X0
	VADDSD X0, X3, X3          // its bound
	VMOVQ X3, R9
	MOVQ $0x4040000000000000, R13 // 32.0; non-negative float64s order as their bits, NaN above
	CMPQ R9, R13
	JB   hvlfastok
	SHRQ $52, R9               // biased float64 exponent of B (2047 for NaN)
	VMOVD X4, R13              // zero-extends
	CMPL R12, R13
	JAE  hvlminok
	MOVL R12, R13

hvlminok:
	ADDQ $927, R13             // B < 2^(e-97) holds when B's exponent field < (e-1) + 927
	CMPQ R9, R13
	JB   hvlfastok
	INCQ R14

hvlfastok:
	VMOVAPD X14, X15           // rotate: after four rows X15 holds row 0, X12 row 3
	VMOVAPD X13, X14
	VMOVAPD X12, X13
	VMOVAPD X2, X12
	ADDQ R8, R11
	INCQ R10
	CMPQ R10, $4
	JB   hvlrow

	TESTQ R14, R14
	JNZ  hvlseq
	VCVTSD2SS X15, X15, X15
	VMOVSS X15, (DX)
	VCVTSD2SS X14, X14, X14
	VMOVSS X14, 4(DX)
	VCVTSD2SS X13, X13, X13
	VMOVSS X13, 8(DX)
	VCVTSD2SS X12, X12, X12
	VMOVSS X12, 12(DX)
	JMP  hvlnext

hvlseq:
	VMOVSS (DX), X12
	VCVTSS2SD X12, X12, X12
	VMOVSS 4(DX), X13
	VCVTSS2SD X13, X13, X13
	VMOVSS 8(DX), X14
	VCVTSS2SD X14, X14, X14
	VMOVSS 12(DX), X15
	VCVTSS2SD X15, X15, X15
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	MOVQ BX, AX

hvltail:
	CMPQ AX, CX
	JAE  hvldone
	VMOVSS (DI)(AX*2), X8
	MOVWLZX (SI)(AX*1), R9
	VMOVD R9, X0
	MOVWLZX (R11)(AX*1), R9
	VMOVD R9, X1
	MOVWLZX (R12)(AX*1), R9
	VMOVD R9, X2
	MOVWLZX (R13)(AX*1), R9
	VMOVD R9, X3
	VCVTPH2PS X0, X0
	VCVTPH2PS X1, X1
	VCVTPH2PS X2, X2
	VCVTPH2PS X3, X3
	VMULSS X8, X0, X0
	VMULSS X8, X1, X1
	VMULSS X8, X2, X2
	VMULSS X8, X3, X3
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X1, X1, X1
	VCVTSS2SD X2, X2, X2
	VCVTSS2SD X3, X3, X3
	VADDSD X0, X12, X12
	VADDSD X1, X13, X13
	VADDSD X2, X14, X14
	VADDSD X3, X15, X15
	ADDQ $2, AX
	JMP  hvltail

hvldone:
	VCVTSD2SS X12, X12, X12
	VMOVSS X12, (DX)
	VCVTSD2SS X13, X13, X13
	VMOVSS X13, 4(DX)
	VCVTSD2SS X14, X14, X14
	VMOVSS X14, 8(DX)
	VCVTSD2SS X15, X15, X15
	VMOVSS X15, 12(DX)
	JMP  hvlnext

hvlnext:
	ADDQ 0(SP), SI
	ADDQ $16, DX
	DECQ 8(SP)
	JMP  hvltile

hvlend:
	VZEROUPPER
	RET

// func f16Gemm4x1LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32, next []uint16)
// tinyBLAS's 16 lanes for groups tiles of four rows, tile g's rows starting
// at w[g*gs] and ws apart: out[4g+r] = sum_{c<n} f32(w[g*gs+r*ws+c])*x[c]
// for r < 4; n must be a multiple of 16. Row r's lanes are in Y(2r) (0-7)
// and Y(2r+1).
//
// Attention calls it once per head, with tiles of four keys (a few vector
// steps each) or four rows of the transposed values (a few cache lines
// each, rows far apart), read once per decode step and so mostly from
// memory: too short for the hardware prefetchers, and the loop stalled on
// every row's loads. It prefetches the rows of the tile F16PREFETCH bytes
// of row ahead, rounded up to whole tiles, into L2 (PREFETCHT1). Measured
// in a batched decode (24m, 8 sequences, AMD EPYC): one tile ahead into
// L1 (PREFETCHT0, as before) left the time unchanged, 1 KiB ahead into L1
// saved about 5%, into L2 30% (512 B 22%, 2 KiB 25%; PREFETCHT2 15%,
// PREFETCHNTA 5%, 4 KiB into L1 lost time). Prefetches past the last tile
// change no data and cannot fault (one of an unmapped address is dropped).
// With next not nil the last tiles prefetch next's first tiles instead
// (same ws and gs): the caller's next call of this kernel, for attention
// the next task's keys or values, which then start warm (6% less time in
// this kernel; past-the-end prefetches of keys fetched unused cells).
// With next given, the distance paid again (the first tiles no longer
// cold): 2 KiB took 8% less time than 1 KiB (768 B +10%, 1.5 KiB -4%,
// 3 KiB -5%, 4 KiB -8%, 3 runs each).
#define F16PREFETCH 2048

TEXT ·f16Gemm4x1LoopAVX(SB), NOSPLIT, $8-128
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ gs+32(FP), R9
	MOVQ groups+40(FP), R10
	MOVQ x_base+48(FP), DI
	MOVQ n+72(FP), CX
	MOVQ out_base+80(FP), DX
	SHLQ $1, R8
	SHLQ $1, R9
	SHLQ $1, CX                // n in weight bytes
	// Prefetch distance: (F16PREFETCH+CX-1)/CX whole tiles (one when n
	// is 0).
	MOVQ $1, AX
	TESTQ CX, CX
	JZ   hglpf
	MOVQ $(F16PREFETCH-1), AX
	ADDQ CX, AX
	MOVQ DX, R14
	XORQ DX, DX
	DIVQ CX
	MOVQ R14, DX

hglpf:
	MOVQ AX, 0(SP)             // tiles ahead
	IMULQ R9, AX
	MOVQ AX, R14               // bytes from a tile to the one prefetched

hgltile:
	TESTQ R10, R10
	JZ    hgldone
	// The last tiles prefetch the first ones of next, if given: tile
	// k-R10 of it, k being the tiles ahead.
	CMPQ R10, 0(SP)
	JA   hglpfok
	MOVQ next_base+104(FP), BX
	TESTQ BX, BX
	JZ   hglpfok
	MOVQ 0(SP), R14
	SUBQ R10, R14
	IMULQ R9, R14
	ADDQ BX, R14
	SUBQ SI, R14

hglpfok:
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	CLEARY0Y7
	XORQ AX, AX                // weight byte offset; x offset is twice it

hglloop:
	CMPQ AX, CX
	JAE  hglsum
	// A later tile's rows, at the same offset (see above).
	LEAQ (SI)(R14*1), BX
	PREFETCHT1 (BX)(AX*1)
	LEAQ (R11)(R14*1), BX
	PREFETCHT1 (BX)(AX*1)
	LEAQ (R12)(R14*1), BX
	PREFETCHT1 (BX)(AX*1)
	LEAQ (R13)(R14*1), BX
	PREFETCHT1 (BX)(AX*1)
	VMOVUPS (DI)(AX*2), Y8
	VMOVUPS 32(DI)(AX*2), Y9
	VCVTPH2PS (SI)(AX*1), Y10
	VCVTPH2PS 16(SI)(AX*1), Y11
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y11, Y1
	VCVTPH2PS (R11)(AX*1), Y12
	VCVTPH2PS 16(R11)(AX*1), Y13
	VFMADD231PS Y8, Y12, Y2
	VFMADD231PS Y9, Y13, Y3
	VCVTPH2PS (R12)(AX*1), Y10
	VCVTPH2PS 16(R12)(AX*1), Y11
	VFMADD231PS Y8, Y10, Y4
	VFMADD231PS Y9, Y11, Y5
	VCVTPH2PS (R13)(AX*1), Y12
	VCVTPH2PS 16(R13)(AX*1), Y13
	VFMADD231PS Y8, Y12, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $32, AX
	JMP  hglloop

hglsum:
	REDUCE16(Y0, Y1, X0, X1)
	VMOVSS X0, (DX)
	REDUCE16(Y2, Y3, X2, X3)
	VMOVSS X2, 4(DX)
	REDUCE16(Y4, Y5, X4, X5)
	VMOVSS X4, 8(DX)
	REDUCE16(Y6, Y7, X6, X7)
	VMOVSS X6, 12(DX)
	ADDQ R9, SI
	ADDQ $16, DX
	DECQ R10
	JMP  hgltile

hgldone:
	VZEROUPPER
	RET

// func f16Gemm4x3AVX(w []uint16, ws int, x []float32, xs int, n int, out []float32, os int)
// tinyBLAS's 16 lanes for four weight rows and three activation rows:
// out[b*os+r] = sum_{c<n} f32(w[r*ws+c])*x[b*xs+c] for r < 4, b < 3; n must
// be a multiple of 16. Twelve pairs of accumulators do not fit in sixteen
// registers, so the tile runs twice over the row: lanes 0-7 (the first
// eight of every 16 elements), parked on the stack, then lanes 8-15; the
// additions in each lane are the same as in one pass. (r, b) is in Y(3r+b).
TEXT ·f16Gemm4x3AVX(SB), NOSPLIT, $384-104
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ xs+56(FP), R9
	MOVQ n+64(FP), CX
	MOVQ out_base+72(FP), DX
	MOVQ os+96(FP), R10
	SHLQ $1, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $1, CX
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	LEAQ (DI)(R9*1), AX
	LEAQ (DI)(R9*2), BX
	XORQ R14, R14              // pass: 0 for lanes 0-7, 16 (weight bytes) for 8-15

h43pass:
	CLEARY0Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ R14, R8               // weight byte offset; x offset is twice it

h43loop:
	CMPQ R8, CX
	JAE  h43end
	VMOVUPS (DI)(R8*2), Y12
	VMOVUPS (AX)(R8*2), Y13
	VMOVUPS (BX)(R8*2), Y14
	VCVTPH2PS (SI)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VCVTPH2PS (R11)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VCVTPH2PS (R12)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VCVTPH2PS (R13)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ $32, R8
	JMP  h43loop

h43end:
	TESTQ R14, R14
	JNZ  h43sum
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y1, 32(SP)
	VMOVUPS Y2, 64(SP)
	VMOVUPS Y3, 96(SP)
	VMOVUPS Y4, 128(SP)
	VMOVUPS Y5, 160(SP)
	VMOVUPS Y6, 192(SP)
	VMOVUPS Y7, 224(SP)
	VMOVUPS Y8, 256(SP)
	VMOVUPS Y9, 288(SP)
	VMOVUPS Y10, 320(SP)
	VMOVUPS Y11, 352(SP)
	MOVQ $16, R14
	JMP  h43pass

h43sum:
	VMOVUPS 0(SP), Y12
	REDUCE16(Y12, Y0, X12, X0)
	VMOVSS X12, (DX)
	VMOVUPS 96(SP), Y12
	REDUCE16(Y12, Y3, X12, X3)
	VMOVSS X12, 4(DX)
	VMOVUPS 192(SP), Y12
	REDUCE16(Y12, Y6, X12, X6)
	VMOVSS X12, 8(DX)
	VMOVUPS 288(SP), Y12
	REDUCE16(Y12, Y9, X12, X9)
	VMOVSS X12, 12(DX)
	LEAQ (DX)(R10*1), DX
	VMOVUPS 32(SP), Y12
	REDUCE16(Y12, Y1, X12, X1)
	VMOVSS X12, (DX)
	VMOVUPS 128(SP), Y12
	REDUCE16(Y12, Y4, X12, X4)
	VMOVSS X12, 4(DX)
	VMOVUPS 224(SP), Y12
	REDUCE16(Y12, Y7, X12, X7)
	VMOVSS X12, 8(DX)
	VMOVUPS 320(SP), Y12
	REDUCE16(Y12, Y10, X12, X10)
	VMOVSS X12, 12(DX)
	LEAQ (DX)(R10*1), DX
	VMOVUPS 64(SP), Y12
	REDUCE16(Y12, Y2, X12, X2)
	VMOVSS X12, (DX)
	VMOVUPS 160(SP), Y12
	REDUCE16(Y12, Y5, X12, X5)
	VMOVSS X12, 4(DX)
	VMOVUPS 256(SP), Y12
	REDUCE16(Y12, Y8, X12, X8)
	VMOVSS X12, 8(DX)
	VMOVUPS 352(SP), Y12
	REDUCE16(Y12, Y11, X12, X11)
	VMOVSS X12, 12(DX)
	VZEROUPPER
	RET

// func roundF16AVX(dst, src []float32)
// Rounds len(src)/8*8 values to half precision (round to nearest even,
// VCVTPS2PH) and widens them back: the activations of an F16 matmul.
TEXT ·roundF16AVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX

r16loop:
	TESTQ CX, CX
	JZ    r16done
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JMP  r16loop

r16done:
	VZEROUPPER
	RET

// func f16VecRows(w []uint16, ws int, x []float32, n int, out []float32)
// out[r] = f16DotVecAVX(w[r*ws:r*ws+n], x[:n]) for r < len(out), for n a
// multiple of 64 (no leftovers): the same instructions, one call for a
// whole run of rows, which decode streams one after the other. (Measured
// against 512-bit loads and PREFETCHT0/T1/NTA at several distances on the
// fixtures' AMD EPYC: from DRAM none beat this loop.)
TEXT ·f16VecRows(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ n+56(FP), CX
	MOVQ out_base+64(FP), DX
	MOVQ out_len+72(FP), BX
	SHLQ $1, R8                // row stride in bytes
	SHLQ $1, CX                // weight bytes per row

hrrow:
	TESTQ BX, BX
	JZ    hrdone
	CLEARY0Y7
	XORQ   AX, AX

hrloop:
	CMPQ AX, CX
	JAE  hrsum
	VEC64STEP(SI)
	ADDQ $128, AX
	JMP  hrloop

hrsum:
	REDUCE64
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	ADDQ   R8, SI
	DECQ   BX
	JMP    hrrow

hrdone:
	VZEROUPPER
	RET
