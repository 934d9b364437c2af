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
// in integers to one register of [r0 r1 r2 r3] (exact), converted once,
// times the activation scale, fused with the weight scales [d0 d1 d2 d3]
// into ACC: per block acc += dw * (float(sum) * dx), the order of the 4x8
// tiles, so a row's result does not depend on which tile computed it. The
// lane sums use dword and qword unpacks and adds (single-cycle shuffles)
// rather than VPHADDD, which is microcoded on AMD Zen.
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
	VEXTRACTI128 $1, Y8, X13; \
	VPADDD X13, X8, X8; \
	VCVTDQ2PS X8, X8; \
	VMULPS XD, X8, X8; \
	VFMADD231PS X4, X8, ACC

// func q8Tile4x4VNNI(w []byte, ws int, xq []int8, xs int, xc []int32, xd8 []float32, nb int, out []float32, os int, n int)
// Four Q8_0 rows (stride ws bytes) times n (1 to 4) Q8 activation rows
// (codes at stride xs, their offset corrections xc at the same byte stride,
// scales xd8) over nb blocks: out[b*os+r], r < 4, b < n; rows from n on are
// neither read nor stored, so a batch needs no padding. The weight codes are offset
// to unsigned (w XOR 0x80 = w+128) as they are loaded, so the correction
// -128*(sum of four activation codes) per lane belongs to the activations
// and is computed once per product (q8CorrGo), not once per weight tile.
// The eight lanes of each (row, activation) pair are then summed in
// integers (exact) down to one, so each block costs one conversion,
// multiply and fused add per activation row instead of one per pair.
TEXT ·q8Tile4x4VNNI(SB), NOSPLIT, $0-160
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
	// weight scales d0..d3
	VPINSRW $0, (SI), X5, X5
	VPINSRW $1, (SI)(R8*1), X5, X5
	VPINSRW $2, (R9), X5, X5
	VPINSRW $3, (R9)(R8*1), X5, X5
	VCVTPH2PS X5, X4
	QROW((DI), (R10), (DX), X16)
	CMPQ n+152(FP), $2
	JB   vtnext
	QROW((DI)(R11*1), (R10)(R11*1), (DX)(R14*1), X17)
	CMPQ n+152(FP), $3
	JB   vtnext
	QROW((R12), (BX), (AX), X18)
	CMPQ n+152(FP), $4
	JB   vtnext
	QROW((R12)(R11*1), (BX)(R11*1), (AX)(R14*1), X19)

vtnext:
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
	MOVQ n+152(FP), CX
	VMOVUPS X16, (DI)
	CMPQ CX, $2
	JB   vtdone
	VMOVUPS X17, (DI)(R11*1)
	CMPQ CX, $3
	JB   vtdone
	LEAQ (DI)(R11*2), DI
	VMOVUPS X18, (DI)
	CMPQ CX, $4
	JB   vtdone
	VMOVUPS X19, (DI)(R11*1)

vtdone:
	VZEROUPPER
	RET

// q8Tile4x8VNNI's scratch holds, per block, the four weight rows' codes
// already offset to unsigned, rows 0 and 1 dword-interleaved in the first
// 64 bytes and rows 2 and 3 in the next 64 (so a pair's dword d of both
// rows is one qword: d = 0, 1, 4, 5 at 0, 8, 16, 24, d = 2, 3, 6, 7 at
// 32..56), then the four scales as float32 (16 bytes): 144 bytes, in a
// ring of three blocks.
#define Q8W_BLOCK 144

// W8PREP(DST): the scratch block at DST from the weight block at SI, R9
// (rows 0-1 and 2-3 at stride R8), which then move to the next block:
// one 32-byte XOR per row (rather than one per broadcast, 8x the vector
// work), a dword interleave per pair of rows, and the four scales widened
// at once.
#define W8PREP(DST) \
	VPXORD 2(SI), Y8, Y28; \
	VPXORD 2(SI)(R8*1), Y8, Y29; \
	VPXORD 2(R9), Y8, Y30; \
	VPXORD 2(R9)(R8*1), Y8, Y31; \
	VPUNPCKLDQ Y29, Y28, Y18; \
	VPUNPCKHDQ Y29, Y28, Y19; \
	VPUNPCKLDQ Y31, Y30, Y20; \
	VPUNPCKHDQ Y31, Y30, Y21; \
	VMOVDQU32 Y18, 0(DST); \
	VMOVDQU32 Y19, 32(DST); \
	VMOVDQU32 Y20, 64(DST); \
	VMOVDQU32 Y21, 96(DST); \
	VPINSRW $0, (SI), X10, X10; \
	VPINSRW $1, (SI)(R8*1), X10, X10; \
	VPINSRW $2, (R9), X10, X10; \
	VPINSRW $3, (R9)(R8*1), X10, X10; \
	VCVTPH2PS X10, X15; \
	VMOVUPS X15, 128(DST); \
	ADDQ $34, SI; \
	ADDQ $34, R9

// W8PAIR(OFF, ACCA, ACCB, FACC): weight rows OFF/32 and OFF/32+1 of the
// scratch block at BX against the eight activation rows in Z0..Z7, whose
// 16 lanes hold each activation row's dword twice (lane 2b+h: row b, for
// weight row h of the pair). Each qword of the pair's two dwords d is
// broadcast by a load, and VPDPBUSD adds into lane 2b+h the products of
// weight row h's dword d with activation row b's, in two chains; ACCA
// starts from the corrections Z9. The exact integer sums then go
// float(sum) * dx (Z10), fused with the rows' scales (Z15) into FACC.
#define W8PAIR(OFF, ACCA, ACCB, FACC) \
	VMOVDQA32 Z9, ACCA; \
	VPXORD ACCB, ACCB, ACCB; \
	VPBROADCASTQ OFF+0(BX), Z24; \
	VPDPBUSD Z0, Z24, ACCA; \
	VPBROADCASTQ OFF+8(BX), Z25; \
	VPDPBUSD Z1, Z25, ACCB; \
	VPBROADCASTQ OFF+32(BX), Z26; \
	VPDPBUSD Z2, Z26, ACCA; \
	VPBROADCASTQ OFF+40(BX), Z27; \
	VPDPBUSD Z3, Z27, ACCB; \
	VPBROADCASTQ OFF+16(BX), Z24; \
	VPDPBUSD Z4, Z24, ACCA; \
	VPBROADCASTQ OFF+24(BX), Z25; \
	VPDPBUSD Z5, Z25, ACCB; \
	VPBROADCASTQ OFF+48(BX), Z26; \
	VPDPBUSD Z6, Z26, ACCA; \
	VPBROADCASTQ OFF+56(BX), Z27; \
	VPDPBUSD Z7, Z27, ACCB; \
	VPADDD ACCB, ACCA, ACCA; \
	VCVTDQ2PS ACCA, ACCA; \
	VMULPS Z10, ACCA, ACCA; \
	VBROADCASTSD 128+OFF/8(BX), Z15; \
	VFMADD231PS Z15, ACCA, FACC

// W8BLOCK: the block of scratch BX against activation block DI (codes),
// R10 (corrections), DX (scales), which then move to the next block, and
// the prefetch of the next tile's rows at R13 (each row here is too short
// a stream for the hardware prefetchers).
#define W8BLOCK \
	PREFETCHT0 (R13); \
	PREFETCHT0 64(R13); \
	PREFETCHT0 128(R13); \
	ADDQ $136, R13; \
	VMOVDQU32 0(DI), Z0; \
	VMOVDQU32 64(DI), Z1; \
	VMOVDQU32 128(DI), Z2; \
	VMOVDQU32 192(DI), Z3; \
	VMOVDQU32 256(DI), Z4; \
	VMOVDQU32 320(DI), Z5; \
	VMOVDQU32 384(DI), Z6; \
	VMOVDQU32 448(DI), Z7; \
	VMOVDQU32 (R10), Z9; \
	VMOVUPS (DX), Z10; \
	W8PAIR(0, Z11, Z12, Z16); \
	W8PAIR(64, Z13, Z14, Z17); \
	ADDQ $512, DI; \
	ADDQ $64, R10; \
	ADDQ $64, DX

// func q8Tile4x8VNNI(w []byte, ws int, xp []int8, xc []int32, xd []float32, nb int, out []float32, os int)
// Four Q8_0 rows (stride ws bytes) times eight activation rows packed by
// q8PackGo over nb blocks: out[b*os+r], r < 4, b < 8. Each 32-bit lane
// pairs one activation row with one of two weight rows: per block, for
// each dword position, the two weight rows' dwords (four codes each,
// offset to unsigned) are broadcast as a qword and VPDPBUSD adds their
// products with that dword of every activation row, so eight 512-bit
// VPDPBUSD give the block's integer dot products of two weight rows with
// all eight activation rows, with no horizontal sums and one broadcast
// load per 64 multiply-adds. The lanes start from the activations'
// corrections (-128 * sum of the block's codes), so they hold the exact
// integer sums; each block then adds float(sum) * dx * dw.
//
// The weight block is first offset, interleaved and its scales widened
// into a scratch block on the stack (W8PREP), two blocks ahead of the
// products (W8BLOCK), so that work and the weight loads overlap the
// arithmetic.
TEXT ·q8Tile4x8VNNI(SB), $432-144
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ xp_base+32(FP), DI
	MOVQ xc_base+56(FP), R10
	MOVQ xd_base+80(FP), DX
	MOVQ nb+104(FP), CX
	LEAQ (SI)(R8*2), R9        // weight rows 2, 3
	LEAQ (SI)(R8*4), R13       // the next tile's rows, prefetched as we go
	VMOVDQU bytes80<>(SB), Y8
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	LEAQ 0(SP), BX             // the block in the products
	LEAQ Q8W_BLOCK(SP), AX     // the next one, prepared
	LEAQ (2*Q8W_BLOCK)(SP), R11 // the one after, in preparation
	TESTQ CX, CX
	JZ    v8sum
	W8PREP(BX)
	CMPQ CX, $1
	JEQ  v8last1
	W8PREP(AX)
	SUBQ $2, CX                // blocks left to prepare
	JZ   v8last2

v8block:
	W8PREP(R11)
	W8BLOCK
	MOVQ BX, R12
	MOVQ AX, BX
	MOVQ R11, AX
	MOVQ R12, R11
	DECQ CX
	JNZ  v8block

v8last2:
	W8BLOCK
	MOVQ AX, BX

v8last1:
	W8BLOCK

v8sum:
	// Lane 2b+h of Z16 is (weight row h, activation row b), of Z17 (row
	// 2+h, b): interleaving their qwords gives, in each 128-bit lane L,
	// rows 0..3 of activation row 2L (Z28) and of 2L+1 (Z29).
	MOVQ out_base+112(FP), DI
	MOVQ os+136(FP), R11
	SHLQ $2, R11
	VPUNPCKLQDQ Z17, Z16, Z28
	VPUNPCKHQDQ Z17, Z16, Z29
	LEAQ (R11)(R11*2), R12     // 3 rows of out
	LEAQ (DI)(R11*4), BX       // activation row 4
	VMOVUPS X28, (DI)
	VMOVUPS X29, (DI)(R11*1)
	VEXTRACTF32X4 $1, Z28, (DI)(R11*2)
	VEXTRACTF32X4 $1, Z29, (DI)(R12*1)
	VEXTRACTF32X4 $2, Z28, (BX)
	VEXTRACTF32X4 $2, Z29, (BX)(R11*1)
	VEXTRACTF32X4 $3, Z28, (BX)(R11*2)
	VEXTRACTF32X4 $3, Z29, (BX)(R12*1)
	VZEROUPPER
	RET
