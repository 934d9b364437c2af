//go:build amd64 && !purego

#include "textflag.h"

// Q8_0 x Q8 tiles with AVX512-VNNI (VPDPBUSD on 256-bit registers, which
// also opens registers Y16..Y31). VPDPBUSD multiplies unsigned by signed
// bytes, so the 4x4 tiles offset the weights to w+128 (w XOR 0x80) and
// start from the excess, -128 * (sum of the activation codes); the 4x8
// tile offsets the activations instead and takes off 128 * (sum of the
// weight codes), from a table of int16 sums made once per weight
// (Weight.vnniCorrTable).

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

// W8QWORD(OFF, ZX): qword OFF/8 of the four weight rows' codes, each
// broadcast straight from the matrix as VPDPBUSD's signed operand, against
// the same qword of the eight activation rows in ZX (offset to unsigned,
// a+128, by q8PackGo), added into Z11..Z14 (rows 0..3): lane 2b+c is
// activation row b's four-code chunk c of the qword. Going through the
// qwords across the four rows rather than row by row measured 5-7% faster
// (four independent chains in flight at once).
#define W8QWORD(OFF, ZX) \
	VPBROADCASTQ OFF(SI), Z24; \
	VPDPBUSD Z24, ZX, Z11; \
	VPBROADCASTQ OFF(R11), Z25; \
	VPDPBUSD Z25, ZX, Z12; \
	VPBROADCASTQ OFF(R9), Z26; \
	VPDPBUSD Z26, ZX, Z13; \
	VPBROADCASTQ OFF(R12), Z27; \
	VPDPBUSD Z27, ZX, Z14

// W8PAIR(A0, A1, T0, T1): the chunk lanes of two rows' sums added (in
// integers, exact), A0 then holding lane 2b+h = (weight row h, activation
// row b): even lanes from A0, odd ones from A1.
#define W8PAIR(A0, A1, T0, T1) \
	VPSHUFD $0xb1, A0, T0; \
	VPADDD T0, A0, A0; \
	VPSHUFD $0xb1, A1, T1; \
	VPADDD T1, A1, K2, A0

// func q8Tile4x8VNNI(w []byte, ws int, wc []int16, xp []int8, xd []float32, nb int, out []float32, os int)
// Four Q8_0 rows (stride ws bytes; wc their code sums, four int16 per
// block: q8VNNICorr) times eight activation rows packed by q8PackGo over nb
// blocks: out[b*os+r], r < 4, b < 8. Each 32-bit lane pairs one activation
// row with one four-code chunk: per block and weight row, each qword of
// the row's codes is broadcast from the matrix and one 512-bit VPDPBUSD
// adds its products with that qword of all eight activation rows (64
// multiply-adds per broadcast load), four per row. The weight blocks need
// no preparation: the activations are the unsigned operand (offset once
// per product by q8PackGo), and the excess, 128 * the sum of the weight
// codes, is per weight row and block (a table of code sums made once per
// weight, int16: 5.9% of the Q8_0 bytes; int32 products of -128 were
// 11.8%, and summing the codes here per block cost 14-18%). The
// two chunk lanes of each (activation row, weight row) are added in
// integers, then each block adds float(sum) * dx * dw, the order of the
// other Q8_0 tiles.
//
// Measured and set aside: 256-bit registers with one activation row per
// lane and each weight dword broadcast inside VPDPBUSD (m32bcst: no
// broadcast loads, no lane sums, 32 VPDPBUSD per block) ran 8-17%
// slower than this; dropping the prefetches, 3x slower on 32000x768.
TEXT ·q8Tile4x8VNNI(SB), NOSPLIT, $0-144
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ wc_base+32(FP), R10
	MOVQ xp_base+56(FP), DI
	MOVQ xd_base+80(FP), DX
	MOVQ nb+104(FP), CX
	LEAQ (SI)(R8*1), R11       // weight row 1
	LEAQ (SI)(R8*2), R9        // weight row 2
	LEAQ (R9)(R8*1), R12       // weight row 3
	LEAQ (SI)(R8*4), R13       // the next tile's rows, prefetched as we go
	MOVL $0xaaaa, AX
	KMOVW AX, K2
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	TESTQ CX, CX
	JZ    v8sum

v8block:
	// Each row here is too short a stream for the hardware prefetchers.
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	ADDQ $136, R13
	VMOVDQU32 0(DI), Z0
	VMOVDQU32 64(DI), Z1
	VMOVDQU32 128(DI), Z2
	VMOVDQU32 192(DI), Z3
	VMOVUPS (DX), Z10
	// The four rows' fp16 scales gathered in a general register (off the
	// vector pipes; four VPINSRW measured the same within noise) and
	// widened at once: X15 = [d0 d1 d2 d3].
	MOVWQZX (SI), AX
	MOVWQZX (R11), BX
	SHLQ $16, BX
	ORQ  BX, AX
	MOVWQZX (R9), BX
	SHLQ $32, BX
	ORQ  BX, AX
	MOVWQZX (R12), BX
	SHLQ $48, BX
	ORQ  BX, AX
	MOVQ AX, X15
	VCVTPH2PS X15, X15
	// The rows' block code sums, 128 * [S0 S1 S2 S3], taken off the
	// paired lanes below: [S0 S1] in every qword of Z8, [S2 S3] of Z9.
	VPMOVSXWD (R10), X8
	VPSLLD $7, X8, X8
	VPSHUFD $0xee, X8, X9
	VPBROADCASTQ X8, Z8
	VPBROADCASTQ X9, Z9
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	W8QWORD(2, Z0)
	W8QWORD(10, Z1)
	W8QWORD(18, Z2)
	W8QWORD(26, Z3)
	W8PAIR(Z11, Z12, Z20, Z21)
	W8PAIR(Z13, Z14, Z22, Z23)
	VPSUBD Z8, Z11, Z11
	VPSUBD Z9, Z13, Z13
	VCVTDQ2PS Z11, Z11
	VMULPS Z10, Z11, Z11
	VBROADCASTSD X15, Z18
	VFMADD231PS Z18, Z11, Z16
	VCVTDQ2PS Z13, Z13
	VMULPS Z10, Z13, Z13
	VPSHUFD $0xee, X15, X19
	VBROADCASTSD X19, Z19
	VFMADD231PS Z19, Z13, Z17
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $34, R9
	ADDQ $34, R12
	ADDQ $8, R10
	ADDQ $256, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  v8block

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
