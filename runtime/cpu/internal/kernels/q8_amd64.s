//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Sixteen int16 ones: VPMADDWD with it sums adjacent int16 pairs to int32.
DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

// Clears the sign bit of a float32.
DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4

DATA f127<>+0(SB)/4, $127.0
GLOBL f127<>(SB), RODATA|NOPTR, $4

// VPERMD order undoing the lane interleave of VPACKSSDW+VPACKSSWB.
DATA packperm<>+0(SB)/4, $0
DATA packperm<>+4(SB)/4, $4
DATA packperm<>+8(SB)/4, $1
DATA packperm<>+12(SB)/4, $5
DATA packperm<>+16(SB)/4, $2
DATA packperm<>+20(SB)/4, $6
DATA packperm<>+24(SB)/4, $3
DATA packperm<>+28(SB)/4, $7
GLOBL packperm<>(SB), RODATA|NOPTR, $32

// func quantizeQ8AVX(x []float32, qs []int8, d []float32, d8 []float32)
// Quantizes len(x)/32 blocks: d[b] = amax/127 rounded to half precision,
// qs = round-to-even(x*(127/amax)),
// d8[8b..8b+7] = d[b] (broadcast copies the tile kernels read directly).
TEXT ·quantizeQ8AVX(SB), NOSPLIT, $0-96
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ qs_base+24(FP), DI
	MOVQ d_base+48(FP), DX
	MOVQ d8_base+72(FP), R8
	SHRQ $5, CX
	VBROADCASTSS absmask<>(SB), Y15
	VMOVDQU packperm<>(SB), Y14
	VMOVSS f127<>(SB), X13

qblock:
	TESTQ CX, CX
	JZ    qdone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS X5, X4, X4
	VDIVSS X13, X4, X5        // d = amax/127
	VCVTPS2PH $0, X5, X5      // rounded to half (nearest even), as ggml stores it
	VCVTPH2PS X5, X5
	VMOVSS X5, (DX)
	VBROADCASTSS X5, Y5
	VMOVUPS Y5, (R8)
	VXORPS X6, X6, X6
	VUCOMISS X6, X4
	JEQ   qzero
	VDIVSS X4, X13, X5        // 127/amax
	VBROADCASTSS X5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y14, Y0
	VMOVDQU Y0, (DI)
	JMP   qnext

qzero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, (DI)

qnext:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JMP  qblock

qdone:
	VZEROUPPER
	RET

// func q8DotAVX(w []byte, xq []int8, xd []float32) float32
// Dot product of len(xd) Q8_0 weight blocks (34 bytes: f16 d, 32 int8) with
// Q8 activations (32 codes and one float32 scale per block).
TEXT ·q8DotAVX(SB), NOSPLIT, $0-76
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	VMOVDQU ones16<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

q8d2:
	CMPQ CX, $2
	JB   q8d1
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
	JMP  q8d2

q8d1:
	TESTQ CX, CX
	JZ    q8dsum
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

q8dsum:
	VADDPS Y8, Y0, Y0
	HADDSUM8(Y0, X0, X1)
	VMOVSS X0, ret+72(FP)
	VZEROUPPER
	RET

// func q8Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)
// Two Q8_0 weight rows (row stride ws bytes) times four Q8 activation rows
// (code stride xs bytes, scale stride 8*nb floats in xd8, broadcast 8 times
// per block) over nb blocks: out[b*os+r] for r < 2, b < 4. Each weight block
// is loaded once for four activation rows.
TEXT ·q8Tile2x4(SB), NOSPLIT, $0-128
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ xq_base+32(FP), DI
	MOVQ xs+56(FP), R9
	MOVQ xd8_base+64(FP), DX
	MOVQ nb+88(FP), CX
	LEAQ (SI)(R8*1), R8        // second weight row
	MOVQ CX, R10
	SHLQ $5, R10               // scale stride in bytes: 8 floats per block
	LEAQ (DI)(R9*2), R11       // activation rows 2 and 3
	LEAQ (DX)(R10*2), R12
	CLEARY0Y7

t24block:
	TESTQ CX, CX
	JZ    t24sum
	VMOVDQU 2(SI), Y8
	VMOVDQU 2(R8), Y9
	VPSIGNB Y8, Y8, Y10
	VPSIGNB Y9, Y9, Y11
	VCVTPH2PS (SI), X12
	VCVTPH2PS (R8), X13
	VBROADCASTSS X12, Y12
	VBROADCASTSS X13, Y13

	// activation row 0: accumulators Y0 (weight row 0), Y1 (row 1)
	VMOVDQU (DI), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX), Y15, Y15
	VFMADD231PS Y15, Y12, Y0
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX), Y15, Y15
	VFMADD231PS Y15, Y13, Y1

	// activation row 1: Y2, Y3
	VMOVDQU (DI)(R9*1), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y2
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y13, Y3

	// activation row 2: Y4, Y5
	VMOVDQU (R11), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12), Y15, Y15
	VFMADD231PS Y15, Y12, Y4
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12), Y15, Y15
	VFMADD231PS Y15, Y13, Y5

	// activation row 3: Y6, Y7
	VMOVDQU (R11)(R9*1), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y6
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y13, Y7

	ADDQ $34, SI
	ADDQ $34, R8
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, DX
	ADDQ $32, R12
	DECQ CX
	JMP  t24block

t24sum:
	// Y(2b+r) holds activation row b, weight row r: fold pairs of rows into
	// two sums per activation row and store them at out[b*os], out[b*os+1].
	MOVQ out_base+96(FP), DI
	MOVQ os+120(FP), R9
	SHLQ $2, R9
	HSUMROWS4(Y0, Y1, Y2, Y3, X0, X8) // [b0r0 b0r1 b1r0 b1r1]
	VMOVLPS X0, (DI)
	VMOVHPS X0, (DI)(R9*1)
	LEAQ (DI)(R9*2), DI
	HSUMROWS4(Y4, Y5, Y6, Y7, X4, X8)
	VMOVLPS X4, (DI)
	VMOVHPS X4, (DI)(R9*1)
	VZEROUPPER
	RET
