//go:build amd64 && !purego

#include "textflag.h"

// Q8_0 x Q8 tiles with AVX512-VNNI (VPDPBUSD on 256-bit registers, which
// also opens registers Y16..Y31). VPDPBUSD multiplies unsigned by signed
// bytes, so weights are offset to w+128 (w XOR 0x80) and the excess,
// 128 * (sum of the activation codes), is the accumulator's starting value.

DATA bytes80<>+0(SB)/8, $0x8080808080808080
DATA bytes80<>+8(SB)/8, $0x8080808080808080
DATA bytes80<>+16(SB)/8, $0x8080808080808080
DATA bytes80<>+24(SB)/8, $0x8080808080808080
GLOBL bytes80<>(SB), RODATA|NOPTR, $32

// QROW(XSRC, XC, XD, ACC): one activation row against the four weight rows
// of the tile: four VPDPBUSD from the row's corrections, their lanes summed
// in integers to one register of [r0 r1 r2 r3 | r0 r1 r2 r3] (low and high
// lanes of each row), converted once, times the activation scale, fused
// with the weight scales [d0 d1 d2 d3 | d0 d1 d2 d3] into ACC. The lane
// sums use dword and qword unpacks and adds (single-cycle shuffles) rather
// than VPHADDD, which is microcoded on AMD Zen and was the tile's
// bottleneck; integer sums are exact, so the result is the same.
#define QROW(XSRC, XC, XD, ACC) \
	VMOVDQU XSRC, Y12; \
	VMOVDQU XC, Y8; \
	VMOVDQA Y8, Y9; \
	VMOVDQA Y8, Y10; \
	VMOVDQA Y8, Y11; \
	VPDPBUSD Y12, Y0, Y8; \
	VPDPBUSD Y12, Y1, Y9; \
	VPDPBUSD Y12, Y2, Y10; \
	VPDPBUSD Y12, Y3, Y11; \
	VPUNPCKLDQ Y9, Y8, Y13; \
	VPUNPCKHDQ Y9, Y8, Y8; \
	VPADDD Y13, Y8, Y8; \
	VPUNPCKLDQ Y11, Y10, Y13; \
	VPUNPCKHDQ Y11, Y10, Y10; \
	VPADDD Y13, Y10, Y10; \
	VPUNPCKLQDQ Y10, Y8, Y13; \
	VPUNPCKHQDQ Y10, Y8, Y8; \
	VPADDD Y13, Y8, Y8; \
	VCVTDQ2PS Y8, Y8; \
	VMULPS XD, Y8, Y8; \
	VFMADD231PS Y4, Y8, ACC

// func q8Tile4x4VNNI(w []byte, ws int, xq []int8, xs int, xc []int32, xd8 []float32, nb int, out []float32, os int)
// Four Q8_0 rows (stride ws bytes) times four Q8 activation rows (codes at
// stride xs, their offset corrections xc at the same byte stride, scales
// xd8) over nb blocks: out[b*os+r], r, b < 4. The weight codes are offset
// to unsigned (w XOR 0x80 = w+128) as they are loaded, so the correction
// -128*(sum of four activation codes) per lane belongs to the activations
// and is computed once per product (q8CorrGo), not once per weight tile.
// The eight lanes of each (row, activation) pair are then summed in
// integers (exact) down to two, so each block costs one conversion,
// multiply and fused add per activation row instead of one per pair.
TEXT ·q8Tile4x4VNNI(SB), NOSPLIT, $0-152
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ xq_base+32(FP), DI
	MOVQ xs+56(FP), R11
	MOVQ xc_base+64(FP), R10
	MOVQ xd8_base+88(FP), DX
	MOVQ nb+112(FP), CX
	LEAQ (SI)(R8*2), R9        // weight rows 2, 3
	LEAQ (DI)(R11*2), R12      // activation rows 2, 3
	LEAQ (R10)(R11*2), BX      // their corrections
	MOVQ CX, R14
	SHLQ $5, R14               // scale stride: 8 floats per block
	LEAQ (DX)(R14*2), AX
	VMOVDQU bytes80<>(SB), Y14
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19

	// The next tile's four rows follow these four in memory: prefetch them
	// block by block (136 bytes per block), since each row here is too
	// short a stream for the hardware prefetchers to pick up.
	LEAQ (SI)(R8*4), R13

vtblock:
	TESTQ CX, CX
	JZ    vtsum
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	ADDQ $136, R13
	VPXOR 2(SI), Y14, Y0
	VPXOR 2(SI)(R8*1), Y14, Y1
	VPXOR 2(R9), Y14, Y2
	VPXOR 2(R9)(R8*1), Y14, Y3
	// weight scales d0..d3, twice
	VPINSRW $0, (SI), X5, X5
	VPINSRW $1, (SI)(R8*1), X5, X5
	VPINSRW $2, (R9), X5, X5
	VPINSRW $3, (R9)(R8*1), X5, X5
	VPUNPCKLQDQ X5, X5, X5
	VCVTPH2PS X5, Y4
	QROW((DI), (R10), (DX), Y16)
	QROW((DI)(R11*1), (R10)(R11*1), (DX)(R14*1), Y17)
	QROW((R12), (BX), (AX), Y18)
	QROW((R12)(R11*1), (BX)(R11*1), (AX)(R14*1), Y19)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $32, R10
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, AX
	DECQ CX
	JMP  vtblock

vtsum:
	MOVQ out_base+120(FP), DI
	MOVQ os+144(FP), R11
	SHLQ $2, R11
	VEXTRACTF32X4 $1, Y16, X0
	VADDPS X16, X0, X0
	VMOVUPS X0, (DI)
	VEXTRACTF32X4 $1, Y17, X0
	VADDPS X17, X0, X0
	VMOVUPS X0, (DI)(R11*1)
	LEAQ (DI)(R11*2), DI
	VEXTRACTF32X4 $1, Y18, X0
	VADDPS X18, X0, X0
	VMOVUPS X0, (DI)
	VEXTRACTF32X4 $1, Y19, X0
	VADDPS X19, X0, X0
	VMOVUPS X0, (DI)(R11*1)
	VZEROUPPER
	RET
