//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Row-loop variants of the single-row dot products: one call computes a
// whole chunk of rows (the Go call per row costs as much as a short row).
// Their inner loops repeat those of dotF32AVX, q8DotAVX and
// q4DotAVX instruction for instruction (with local label names).

DATA rones16<>+0(SB)/8, $0x0001000100010001
DATA rones16<>+8(SB)/8, $0x0001000100010001
DATA rones16<>+16(SB)/8, $0x0001000100010001
DATA rones16<>+24(SB)/8, $0x0001000100010001
GLOBL rones16<>(SB), RODATA|NOPTR, $32

DATA rnibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rnibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rnibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rnibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL rnibmask<>(SB), RODATA|NOPTR, $32

DATA reights<>+0(SB)/8, $0x0808080808080808
DATA reights<>+8(SB)/8, $0x0808080808080808
DATA reights<>+16(SB)/8, $0x0808080808080808
DATA reights<>+24(SB)/8, $0x0808080808080808
GLOBL reights<>(SB), RODATA|NOPTR, $32

// func dotF32Rows(w []float32, stride int, x []float32, n int, out []float32)
// out[r] = dot(w[r*stride:r*stride+n], x[:n]) for r < len(out); n must be a
// multiple of 8.
TEXT ·dotF32Rows(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), R8
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ x_base+32(FP), R10
	MOVQ n+56(FP), R11
	SHLQ $2, R11
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), BX

f32rows:
	TESTQ BX, BX
	JZ   f32rowsdone
	MOVQ R8, SI
	MOVQ R10, DI
	MOVQ R11, CX
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $-128, DX

rdot32:
	CMPQ AX, DX
	JAE  rdot8
	VMOVUPS (SI)(AX*1), Y4
	VMOVUPS 32(SI)(AX*1), Y5
	VMOVUPS 64(SI)(AX*1), Y6
	VMOVUPS 96(SI)(AX*1), Y7
	VFMADD231PS (DI)(AX*1), Y4, Y0
	VFMADD231PS 32(DI)(AX*1), Y5, Y1
	VFMADD231PS 64(DI)(AX*1), Y6, Y2
	VFMADD231PS 96(DI)(AX*1), Y7, Y3
	ADDQ $128, AX
	JMP  rdot32

rdot8:
	CMPQ AX, CX
	JAE  rdotsum
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DI)(AX*1), Y4, Y0
	ADDQ $32, AX
	JMP  rdot8

rdotsum:
	HADDSUM32(Y0, Y1, Y2, Y3, X0, X1)

	VMOVSS X0, (R13)
	ADDQ R9, R8
	ADDQ $4, R13
	DECQ BX
	JMP  f32rows

f32rowsdone:
	VZEROUPPER
	RET

// func q8Rows(w []byte, rb int, xq []int8, xd []float32, out []float32)
// out[r] = q8DotAVX(w[r*rb:(r+1)*rb], xq, xd) for r < len(out).
TEXT ·q8Rows(SB), NOSPLIT, $0-104
	MOVQ w_base+0(FP), R8
	MOVQ rb+24(FP), R9
	MOVQ xq_base+32(FP), R10
	MOVQ xd_base+56(FP), R11
	MOVQ xd_len+64(FP), R12
	MOVQ out_base+80(FP), R13
	MOVQ out_len+88(FP), BX
	VMOVDQU rones16<>(SB), Y15

q8rows:
	TESTQ BX, BX
	JZ   q8rowsdone
	MOVQ R8, SI
	MOVQ R10, DI
	MOVQ R11, DX
	MOVQ R12, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

rq8d2:
	CMPQ CX, $2
	JB   rq8d1
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VMOVDQU 36(SI), Y9
	VMOVDQU 32(DI), Y10
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y2
	VPSIGNB Y9, Y9, Y11
	VPSIGNB Y9, Y10, Y10
	VPMADDUBSW Y2, Y3, Y3
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD Y15, Y3, Y3
	VPMADDWD Y15, Y11, Y11
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y11, Y11
	VCVTPH2PS (SI), X4
	VCVTPH2PS 34(SI), X12
	VMULSS (DX), X4, X4
	VMULSS 4(DX), X12, X12
	VBROADCASTSS X4, Y4
	VBROADCASTSS X12, Y12
	VFMADD231PS Y3, Y4, Y0
	VFMADD231PS Y11, Y12, Y8
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JMP  rq8d2

rq8d1:
	TESTQ CX, CX
	JZ    rq8dsum
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y2
	VPMADDUBSW Y2, Y3, Y3
	VPMADDWD Y15, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS (SI), X4
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y3, Y4, Y0

rq8dsum:
	VADDPS Y8, Y0, Y0
	HADDSUM8(Y0, X0, X1)

	VMOVSS X0, (R13)
	ADDQ R9, R8
	ADDQ $4, R13
	DECQ BX
	JMP  q8rows

q8rowsdone:
	VZEROUPPER
	RET

// func q4Rows(w []byte, rb int, xq []int8, xd []float32, out []float32)
// out[r] = q4DotAVX(w[r*rb:(r+1)*rb], xq, xd) for r < len(out).
TEXT ·q4Rows(SB), NOSPLIT, $0-104
	MOVQ w_base+0(FP), R8
	MOVQ rb+24(FP), R9
	MOVQ xq_base+32(FP), R10
	MOVQ xd_base+56(FP), R11
	MOVQ xd_len+64(FP), R12
	MOVQ out_base+80(FP), R13
	MOVQ out_len+88(FP), BX
	VMOVDQU rones16<>(SB), Y15

q4rows:
	TESTQ BX, BX
	JZ   q4rowsdone
	MOVQ R8, SI
	MOVQ R10, DI
	MOVQ R11, DX
	MOVQ R12, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

rq4d2:
	CMPQ CX, $2
	JB   rq4d1
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND rnibmask<>(SB), Y1, Y1
	VPSUBB reights<>(SB), Y1, Y1
	VMOVDQU 20(SI), X9
	VPSRLW $4, X9, X11
	VINSERTI128 $1, X11, Y9, Y9
	VPAND rnibmask<>(SB), Y9, Y9
	VPSUBB reights<>(SB), Y9, Y9
	VMOVDQU (DI), Y2
	VMOVDQU 32(DI), Y10
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y2
	VPSIGNB Y9, Y9, Y11
	VPSIGNB Y9, Y10, Y10
	VPMADDUBSW Y2, Y3, Y3
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD Y15, Y3, Y3
	VPMADDWD Y15, Y11, Y11
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y11, Y11
	VCVTPH2PS (SI), X4
	VCVTPH2PS 18(SI), X12
	VMULSS (DX), X4, X4
	VMULSS 4(DX), X12, X12
	VBROADCASTSS X4, Y4
	VBROADCASTSS X12, Y12
	VFMADD231PS Y3, Y4, Y0
	VFMADD231PS Y11, Y12, Y8
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JMP  rq4d2

rq4d1:
	TESTQ CX, CX
	JZ    rq4dsum
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND rnibmask<>(SB), Y1, Y1
	VPSUBB reights<>(SB), Y1, Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y2
	VPMADDUBSW Y2, Y3, Y3
	VPMADDWD Y15, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS (SI), X4
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y3, Y4, Y0

rq4dsum:
	VADDPS Y8, Y0, Y0
	HADDSUM8(Y0, X0, X1)

	VMOVSS X0, (R13)
	ADDQ R9, R8
	ADDQ $4, R13
	DECQ BX
	JMP  q4rows

q4rowsdone:
	VZEROUPPER
	RET
