//go:build amd64 && !purego

#include "textflag.h"

// REDUCE16 is f16_amd64.s's reduction (tinyBLAS's hsum of a __m512 held
// as two halves): lanes 8-15 added to lanes 0-7, then 4, 2 and 1 wide.
#define REDUCE16(ylo, yhi, xlo, xhi) \
	VADDPS yhi, ylo, ylo; \
	VEXTRACTF128 $1, ylo, xhi; \
	VADDPS xhi, xlo, xlo; \
	VPERMILPS $0x4E, xlo, xhi; \
	VADDPS xhi, xlo, xlo; \
	VMOVSHDUP xlo, xhi; \
	VADDSS xhi, xlo, xlo

// func f16Gemm4x1LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32)
// f16Gemm4x1AVX (f16_amd64.s) for groups tiles of four rows, tile g's
// rows starting at w[g*gs], its rows ws apart, into out[4g:4g+4]: the
// same instructions per tile in the same order, so the same bits, without
// a call and four slice headers per tile. For attention's keys (rows hd
// apart, tiles 4*hd apart, n = hd) one tile is only a few vector steps, so
// the call was most of its cost. n must be a multiple of 16.
TEXT ·f16Gemm4x1LoopAVX(SB), NOSPLIT, $0-104
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

hgltile:
	TESTQ R10, R10
	JZ    hgldone
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX                // weight byte offset; x offset is twice it

hglloop:
	CMPQ AX, CX
	JAE  hglsum
	// The next tile's rows, fetched while this one computes: a value
	// tile's four rows lie far apart and are a few cache lines each, too
	// short for the hardware prefetcher to pick up, and profiles show
	// each row's first load stalling. Prefetching past the last tile
	// reads nothing and cannot fault.
	LEAQ (SI)(R9*1), BX
	PREFETCHT0 (BX)(AX*1)
	LEAQ (R11)(R9*1), BX
	PREFETCHT0 (BX)(AX*1)
	LEAQ (R12)(R9*1), BX
	PREFETCHT0 (BX)(AX*1)
	LEAQ (R13)(R9*1), BX
	PREFETCHT0 (BX)(AX*1)
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

// func f32ToF16StridedAVX(dst []uint16, stride int, src []float32)
// dst[i*stride] = src[i] in half precision, rounded to nearest even (as
// f32ToF16AVX), for len(src)&^7 elements: the transposed value cache's
// store of one position, every head dimension a row of its own.
TEXT ·f32ToF16StridedAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ stride+24(FP), R8
	MOVQ src_base+32(FP), SI
	MOVQ src_len+40(FP), CX
	SHLQ $1, R8
	SHRQ $3, CX

kvscvtloop:
	TESTQ CX, CX
	JZ    kvscvtdone
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VPEXTRW $0, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $1, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $2, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $3, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $4, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $5, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $6, X1, (DI)
	ADDQ R8, DI
	VPEXTRW $7, X1, (DI)
	ADDQ R8, DI
	ADDQ $32, SI
	DECQ CX
	JMP  kvscvtloop

kvscvtdone:
	VZEROUPPER
	RET

// func scaleMaxAVX(x []float32, scale float32) float32
// x[i] *= scale for len(x)&^7 elements, returning the largest product
// (-Inf if none): the softmax's scaling and maximum in one pass. The
// products are elementwise, so the same bits as the scalar loop; the
// maximum of finite values does not depend on the order.
TEXT ·scaleMaxAVX(SB), NOSPLIT, $0-36
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Y1
	MOVL $0xff800000, AX       // -Inf
	VMOVD AX, X2
	VBROADCASTSS X2, Y2
	SHRQ $3, CX

kvsmloop:
	TESTQ CX, CX
	JZ    kvsmdone
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	VMAXPS Y0, Y2, Y2
	ADDQ $32, SI
	DECQ CX
	JMP  kvsmloop

kvsmdone:
	VEXTRACTF128 $1, Y2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0x4E, X2, X3
	VMAXPS X3, X2, X2
	VMOVSHDUP X2, X3
	VMAXSS X3, X2, X2
	VMOVSS X2, ret+32(FP)
	VZEROUPPER
	RET

// func scaleAVX(x []float32, a float32)
// x[i] *= a for len(x)&^7 elements.
TEXT ·scaleAVX(SB), NOSPLIT, $0-28
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS a+24(FP), Y1
	SHRQ $3, CX

kvscloop:
	TESTQ CX, CX
	JZ    kvscdone
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JMP  kvscloop

kvscdone:
	VZEROUPPER
	RET

// func f16DotVec4LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32)
// f16DotVec4AVX (f16_amd64.s, copied here with its labels renamed) for
// groups tiles of four rows, tile g's rows starting at w[g*gs], its rows
// ws apart, into out[4g:4g+4]: each tile runs the one-tile kernel's
// instructions in its order, so the same bits, without a call per tile.
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
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX

hvlmain:
	CMPQ AX, BX
	JAE  hvlred
	VCVTPH2PS (R11)(AX*1), Y8
	VCVTPH2PS 16(R11)(AX*1), Y9
	VCVTPH2PS 32(R11)(AX*1), Y10
	VCVTPH2PS 48(R11)(AX*1), Y11
	VFMADD231PS (DI)(AX*2), Y8, Y0
	VFMADD231PS 32(DI)(AX*2), Y9, Y1
	VFMADD231PS 64(DI)(AX*2), Y10, Y2
	VFMADD231PS 96(DI)(AX*2), Y11, Y3
	VCVTPH2PS 64(R11)(AX*1), Y8
	VCVTPH2PS 80(R11)(AX*1), Y9
	VCVTPH2PS 96(R11)(AX*1), Y10
	VCVTPH2PS 112(R11)(AX*1), Y11
	VFMADD231PS 128(DI)(AX*2), Y8, Y4
	VFMADD231PS 160(DI)(AX*2), Y9, Y5
	VFMADD231PS 192(DI)(AX*2), Y10, Y6
	VFMADD231PS 224(DI)(AX*2), Y11, Y7
	ADDQ $128, AX
	JMP  hvlmain

hvlred:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	REDUCE16(Y0, Y1, X0, X1)
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
