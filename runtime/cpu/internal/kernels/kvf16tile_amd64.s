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
