//go:build amd64 && !purego

#include "textflag.h"

// func addAVX(dst, x []float32)
// dst[i] += x[i] for len(x) a multiple of 8: the residual additions.
TEXT ·addAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	SHLQ $2, CX
	XORQ AX, AX

adloop:
	CMPQ AX, CX
	JAE  addone
	VMOVUPS (DI)(AX*1), Y0
	VADDPS (SI)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  adloop

addone:
	VZEROUPPER
	RET
