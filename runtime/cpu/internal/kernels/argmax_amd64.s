//go:build amd64 && !purego

#include "textflag.h"

// func maxAVX(x []float32) float32
// Four accumulators of eight lanes, 32 elements a step. Each VMAXPS takes
// x as its first source and the accumulator as its second, which it
// returns when either is NaN: NaNs in x are skipped, and an accumulator
// (starting at -Inf) never becomes NaN.
TEXT ·maxAVX(SB), NOSPLIT, $0-28
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVL $0xff800000, AX       // -Inf
	VMOVD AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	SHRQ $5, CX

amloop:
	TESTQ CX, CX
	JZ    amdone
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, SI
	DECQ CX
	JMP  amloop

amdone:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func indexAVX(x []float32, v float32) int
TEXT ·indexAVX(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS v+24(FP), Y1
	SHRQ $3, CX
	XORQ DX, DX                // index of the current group

ixloop:
	TESTQ CX, CX
	JZ    ixnone
	VCMPPS $0, (SI)(DX*4), Y1, Y0 // EQ_OQ
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ   ixfound
	ADDQ $8, DX
	DECQ CX
	JMP  ixloop

ixfound:
	BSFL AX, AX
	ADDQ DX, AX
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET

ixnone:
	MOVQ $-1, ret+32(FP)
	VZEROUPPER
	RET
