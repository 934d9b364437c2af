//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Q4_0 kernels: the 16 nibble-pair bytes of a block are widened to 32 signed
// codes (low nibbles are elements 0..15, high nibbles 16..31, minus 8), then
// the Q8_0 sign-trick dot product follows.

DATA nibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibmask<>(SB), RODATA|NOPTR, $32

DATA eights<>+0(SB)/8, $0x0808080808080808
DATA eights<>+8(SB)/8, $0x0808080808080808
DATA eights<>+16(SB)/8, $0x0808080808080808
DATA eights<>+24(SB)/8, $0x0808080808080808
GLOBL eights<>(SB), RODATA|NOPTR, $32

DATA q4ones16<>+0(SB)/8, $0x0001000100010001
DATA q4ones16<>+8(SB)/8, $0x0001000100010001
DATA q4ones16<>+16(SB)/8, $0x0001000100010001
DATA q4ones16<>+24(SB)/8, $0x0001000100010001
GLOBL q4ones16<>(SB), RODATA|NOPTR, $32

// func q4DotAVX(w []byte, xq []int8, xd []float32) float32
// Dot product of len(xd) Q4_0 weight blocks (18 bytes: f16 d, 16 bytes of
// nibble pairs, code-8 being the value) with Q8 activations.
TEXT ·q4DotAVX(SB), NOSPLIT, $0-76
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	VMOVDQU q4ones16<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

q4d2:
	CMPQ CX, $2
	JB   q4d1
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND nibmask<>(SB), Y1, Y1
	VPSUBB eights<>(SB), Y1, Y1
	VMOVDQU 20(SI), X9
	VPSRLW $4, X9, X11
	VINSERTI128 $1, X11, Y9, Y9
	VPAND nibmask<>(SB), Y9, Y9
	VPSUBB eights<>(SB), Y9, Y9
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
	JMP  q4d2

q4d1:
	TESTQ CX, CX
	JZ    q4dsum
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND nibmask<>(SB), Y1, Y1
	VPSUBB eights<>(SB), Y1, Y1
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

q4dsum:
	VADDPS Y8, Y0, Y0
	HADDSUM8(Y0, X0, X1)
	VMOVSS X0, ret+72(FP)
	VZEROUPPER
	RET

// func q4Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)
// As q8Tile2x4 for Q4_0 weights. Two Q4_0 weight rows (row stride ws bytes) times four Q8 activation rows
// (code stride xs bytes, scale stride 8*nb floats in xd8, broadcast 8 times
// per block) over nb blocks: out[b*os+r] for r < 2, b < 4. Each weight block
// is loaded once for four activation rows.
TEXT ·q4Tile2x4(SB), NOSPLIT, $0-128
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

t24q4block:
	TESTQ CX, CX
	JZ    t24q4sum
	VMOVDQU 2(SI), X8
	VPSRLW $4, X8, X14
	VINSERTI128 $1, X14, Y8, Y8
	VPAND nibmask<>(SB), Y8, Y8
	VPSUBB eights<>(SB), Y8, Y8
	VMOVDQU 2(R8), X9
	VPSRLW $4, X9, X15
	VINSERTI128 $1, X15, Y9, Y9
	VPAND nibmask<>(SB), Y9, Y9
	VPSUBB eights<>(SB), Y9, Y9
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
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX), Y15, Y15
	VFMADD231PS Y15, Y12, Y0
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX), Y15, Y15
	VFMADD231PS Y15, Y13, Y1

	// activation row 1: Y2, Y3
	VMOVDQU (DI)(R9*1), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y2
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (DX)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y13, Y3

	// activation row 2: Y4, Y5
	VMOVDQU (R11), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12), Y15, Y15
	VFMADD231PS Y15, Y12, Y4
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12), Y15, Y15
	VFMADD231PS Y15, Y13, Y5

	// activation row 3: Y6, Y7
	VMOVDQU (R11)(R9*1), Y14
	VPSIGNB Y8, Y14, Y15
	VPMADDUBSW Y15, Y10, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y6
	VPSIGNB Y9, Y14, Y15
	VPMADDUBSW Y15, Y11, Y15
	VPMADDWD q4ones16<>(SB), Y15, Y15
	VCVTDQ2PS Y15, Y15
	VMULPS (R12)(R10*1), Y15, Y15
	VFMADD231PS Y15, Y13, Y7

	ADDQ $18, SI
	ADDQ $18, R8
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, DX
	ADDQ $32, R12
	DECQ CX
	JMP  t24q4block

t24q4sum:
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
