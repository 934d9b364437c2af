//go:build amd64 && !purego

#include "textflag.h"

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
