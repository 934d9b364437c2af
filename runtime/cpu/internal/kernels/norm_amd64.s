//go:build amd64 && !purego

#include "textflag.h"

// func scaleMulAVX(dst, x, w []float32, a float32)
// dst[i] = (x[i]*a)*w[i] for len(x) a multiple of 8: RMSNorm's scaled row
// times its weight, each product rounded to float32 as ggml's separate
// scale and mul do. dst may be x.
TEXT ·scaleMulAVX(SB), NOSPLIT, $0-76
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	MOVQ w_base+48(FP), DX
	VBROADCASTSS a+72(FP), Y15
	SHLQ $2, CX
	XORQ AX, AX

smloop:
	CMPQ AX, CX
	JAE  smdone
	VMULPS (SI)(AX*1), Y15, Y0
	VMULPS (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  smloop

smdone:
	VZEROUPPER
	RET
