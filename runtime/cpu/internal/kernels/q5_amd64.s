//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Five-bit weight kernels (layouts in q5.go). The fifth bits of a Q5_0/Q5_1
// block (a 32-bit word, bit j for element j) are spread to one byte per
// element: the word is broadcast, byte j/8 is shuffled into lane j, every bit
// but j%8 is set and a compare with all-ones gives 0xff where bit j is set.

DATA q5nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5nib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5nib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q5nib<>(SB), RODATA|NOPTR, $32

// byte j of the qh word for element lanes 8j..8j+7 (VPSHUFB works per
// 128-bit lane; the broadcast word is in both)
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32

// every bit but bit j%8 in lane j
DATA q5bits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

DATA q5f0<>+0(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5f0<>+8(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5f0<>+16(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA q5f0<>+24(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL q5f0<>(SB), RODATA|NOPTR, $32

DATA q5x10<>+0(SB)/8, $0x1010101010101010
DATA q5x10<>+8(SB)/8, $0x1010101010101010
DATA q5x10<>+16(SB)/8, $0x1010101010101010
DATA q5x10<>+24(SB)/8, $0x1010101010101010
GLOBL q5x10<>(SB), RODATA|NOPTR, $32

DATA q5x01<>+0(SB)/8, $0x0101010101010101
DATA q5x01<>+8(SB)/8, $0x0101010101010101
DATA q5x01<>+16(SB)/8, $0x0101010101010101
DATA q5x01<>+24(SB)/8, $0x0101010101010101
GLOBL q5x01<>(SB), RODATA|NOPTR, $32

DATA q5x02<>+0(SB)/8, $0x0202020202020202
DATA q5x02<>+8(SB)/8, $0x0202020202020202
DATA q5x02<>+16(SB)/8, $0x0202020202020202
DATA q5x02<>+24(SB)/8, $0x0202020202020202
GLOBL q5x02<>(SB), RODATA|NOPTR, $32

DATA q5ff<>+0(SB)/8, $0xffffffffffffffff
DATA q5ff<>+8(SB)/8, $0xffffffffffffffff
DATA q5ff<>+16(SB)/8, $0xffffffffffffffff
DATA q5ff<>+24(SB)/8, $0xffffffffffffffff
GLOBL q5ff<>(SB), RODATA|NOPTR, $32

DATA q5ones16<>+0(SB)/8, $0x0001000100010001
DATA q5ones16<>+8(SB)/8, $0x0001000100010001
DATA q5ones16<>+16(SB)/8, $0x0001000100010001
DATA q5ones16<>+24(SB)/8, $0x0001000100010001
GLOBL q5ones16<>(SB), RODATA|NOPTR, $32

// Q5BLOCK(qh, qs, dst) leaves the 32 unsigned four-bit codes of the block's
// nibbles in dst (elements 0..15 from the low nibbles, 16..31 from the high
// ones) and 0xff in Y5 for every element whose fifth bit is set. Uses Y6.
#define Q5BLOCK(qh, qs, dst) \
	VMOVDQU qs, X6; \
	VPSRLW $4, X6, X5; \
	VINSERTI128 $1, X5, Y6, dst; \
	VPAND Y15, dst, dst; \
	VPBROADCASTD qh, Y5; \
	VPSHUFB Y14, Y5, Y5; \
	VPOR Y13, Y5, Y5; \
	VPCMPEQB Y12, Y5, Y5

// Q5KBLOCKHEAD starts a Q5_K super-block of q5kDotAVX and q5kRows: the
// scales (bytes 0..7) and mins (8..15) unpacked as for Q4_K in general
// registers (no store-forwarding stall), scales to 16(SP), mins in X13;
// d*xd broadcast in Y4, dmin*xd in X5; the mins' part, sum_j m_j *
// (bsum[2j] + bsum[2j+1]) as one integer, subtracted from X1 as
// dmin*xd*that, fused; qh loaded into Y13 (shifted right by 2 per chunk),
// the int32 lanes Y8 cleared and the chunk offset R13 zeroed.
#define Q5KBLOCKHEAD \
	MOVL 4(SI), R8; \
	MOVL 8(SI), R9; \
	MOVL 12(SI), R10; \
	MOVL R8, AX; \
	ANDL $0x3f3f3f3f, AX; \
	MOVL R10, R11; \
	ANDL $0x0f0f0f0f, R11; \
	MOVL R8, R12; \
	SHRL $6, R12; \
	ANDL $0x03030303, R12; \
	SHLL $4, R12; \
	ORL  R12, R11; \
	SHLQ $32, R11; \
	ORQ  R11, AX; \
	MOVL R9, R8; \
	ANDL $0x3f3f3f3f, R8; \
	MOVL R10, R11; \
	SHRL $4, R11; \
	ANDL $0x0f0f0f0f, R11; \
	MOVL R9, R12; \
	SHRL $6, R12; \
	ANDL $0x03030303, R12; \
	SHLL $4, R12; \
	ORL  R12, R11; \
	SHLQ $32, R11; \
	ORQ  R11, R8; \
	VMOVQ AX, X2; \
	VPINSRQ $1, R8, X2, X2; \
	VPMOVZXBW X2, Y2; \
	VMOVDQU Y2, 16(SP); \
	VEXTRACTI128 $1, Y2, X13; \
	VCVTPH2PS (SI), X3; \
	VBROADCASTSS (DX), X4; \
	VMULPS X4, X3, X3; \
	VBROADCASTSS X3, Y4; \
	VMOVSHDUP X3, X5; \
	VBROADCASTSS X5, X5; \
	VMOVDQU (BX), Y6; \
	VEXTRACTI128 $1, Y6, X8; \
	VPHADDW X8, X6, X6; \
	VPMADDWD X13, X6, X6; \
	VPHADDD X6, X6, X6; \
	VPHADDD X6, X6, X6; \
	VCVTDQ2PS X6, X6; \
	VFNMADD231SS X6, X5, X1; \
	VMOVDQU 16(SI), Y13; \
	VPXOR Y8, Y8, Y8; \
	MOVQ $0, R13

// Q5KCHUNKSTEP adds chunk R13 (32 bytes of nibbles: sub-blocks 2k, low
// nibbles, and 2k+1, high nibbles, each with its fifth bit from qh) times
// the activations and the sub-blocks' scales to the lanes Y8, and
// advances R13.
#define Q5KCHUNKSTEP \
	VMOVDQU 48(SI)(R13*1), Y9; \
	VPSRLW $4, Y9, Y10; \
	VPAND Y15, Y9, Y9; \
	VPAND Y15, Y10, Y10; \
	VPAND Y14, Y13, Y11; \
	VPSLLW $4, Y11, Y11; \
	VPOR Y11, Y9, Y9; \
	VPAND Y7, Y13, Y12; \
	VPSLLW $3, Y12, Y12; \
	VPOR Y12, Y10, Y10; \
	VPSRLW $2, Y13, Y13; \
	VPMADDUBSW (DI)(R13*2), Y9, Y9; \
	VPMADDUBSW 32(DI)(R13*2), Y10, Y10; \
	MOVQ R13, R14; \
	SHRQ $3, R14; \
	VPBROADCASTW 16(SP)(R14*1), Y11; \
	VPBROADCASTW 18(SP)(R14*1), Y12; \
	VPMADDWD Y11, Y9, Y9; \
	VPMADDWD Y12, Y10, Y10; \
	VPADDD Y9, Y8, Y8; \
	VPADDD Y10, Y8, Y8; \
	ADDQ $32, R13

// func q5_0DotAVX(w []byte, xq []int8, xd []float32) float32
// Q5_0 blocks (22 bytes: f16 d, qh, 16 nibble bytes) against Q8_0
// activations: codes q-16 are made signed (0xf0 where the fifth bit is
// clear), then the sign trick of the Q4_0 kernel; eight float lanes take
// d*xd times each block's partial sums, as ggml's AVX2 kernel does.
TEXT ·q5_0DotAVX(SB), NOSPLIT, $0-76
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	VMOVDQU q5nib<>(SB), Y15
	VMOVDQU q5shuf<>(SB), Y14
	VMOVDQU q5bits<>(SB), Y13
	VPCMPEQB Y12, Y12, Y12
	VMOVDQU q5f0<>(SB), Y11
	VMOVDQU q5ones16<>(SB), Y10
	VXORPS Y0, Y0, Y0

q50loop:
	TESTQ CX, CX
	JZ    q50sum
	Q5BLOCK(2(SI), 6(SI), Y1)
	VPANDN Y11, Y5, Y5         // 0xf0 where the fifth bit is clear
	VPOR Y5, Y1, Y1            // signed code q-16
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y2
	VPMADDUBSW Y2, Y3, Y3
	VPMADDWD Y10, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS (SI), X4
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y3, Y4, Y0
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q50loop

q50sum:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+72(FP)
	VZEROUPPER
	RET

// func q5_1DotAVX(w []byte, xq []int8, xd []float32, xs []float32) float32
// Q5_1 blocks (24 bytes: f16 d, f16 m, qh, 16 nibble bytes) against Q8_1
// activations (codes, scales xd, sum terms xs): unsigned codes meet the
// signed activations directly; the min terms m*s are summed apart and added
// at the end, as ggml's AVX2 kernel does.
TEXT ·q5_1DotAVX(SB), NOSPLIT, $0-100
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	MOVQ xs_base+72(FP), BX
	VMOVDQU q5nib<>(SB), Y15
	VMOVDQU q5shuf<>(SB), Y14
	VMOVDQU q5bits<>(SB), Y13
	VPCMPEQB Y12, Y12, Y12
	VMOVDQU q5x10<>(SB), Y11
	VMOVDQU q5ones16<>(SB), Y10
	VXORPS Y0, Y0, Y0
	VXORPS X7, X7, X7          // sum of m*s

q51loop:
	TESTQ CX, CX
	JZ    q51sum
	Q5BLOCK(4(SI), 8(SI), Y1)
	VPAND Y11, Y5, Y5          // 0x10 where the fifth bit is set
	VPOR Y5, Y1, Y1            // code 0..31
	VPMADDUBSW (DI), Y1, Y3
	VPMADDWD Y10, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS (SI), X4         // lanes: d, m
	VMOVSHDUP X4, X8
	VFMADD231SS (BX), X8, X7   // fused, as ggml's compiled loop does
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y3, Y4, Y0
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP  q51loop

q51sum:
	HSUM8(Y0, X0, X1)
	VADDSS X7, X0, X0
	VMOVSS X0, ret+96(FP)
	VZEROUPPER
	RET

// func q5kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32
// Q5_K super-blocks against Q8_K activations: q4kDotAVX's structure with the
// fifth bits of qh (bits 2k and 2k+1 of byte l for chunk k) added to the
// nibbles. As in ggml's AVX2 kernel, the min terms of a super-block are one
// integer, accumulated in a scalar with a fused multiply-add and added to
// the lanes' sum at the end.
TEXT ·q5kDotAVX(SB), NOSPLIT, $64-100
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	MOVQ xs_base+72(FP), BX
	VXORPS Y0, Y0, Y0          // float sum of d*scale parts
	VXORPS X1, X1, X1          // float sum of -dmin*min parts
	VMOVDQU q5nib<>(SB), Y15
	VMOVDQU q5x01<>(SB), Y14
	VMOVDQU q5x02<>(SB), Y7

q5kblock:
	TESTQ CX, CX
	JZ    q5kdone
	Q5KBLOCKHEAD

q5kchunk:
	Q5KCHUNKSTEP
	CMPQ R13, $128
	JB   q5kchunk

	VCVTDQ2PS Y8, Y8
	VFMADD231PS Y8, Y4, Y0

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q5kblock

q5kdone:
	HSUM8(Y0, X0, X2)
	VADDSS X1, X0, X0
	VMOVSS X0, ret+96(FP)
	VZEROUPPER
	RET

// Q5_0SIGNED(blk, dst, x1, y1, x2, y2) leaves the 32 signed codes q-16 of
// the Q5_0 block at blk in dst, with constants from memory; X/Y1 and X/Y2
// (the two views of two registers) are scratch.
#define Q5_0SIGNED(blk, dst, x1, y1, x2, y2) \
	VMOVDQU 6(blk), x1; \
	VPSRLW $4, x1, x2; \
	VINSERTI128 $1, x2, y1, dst; \
	VPAND q5nib<>(SB), dst, dst; \
	VPBROADCASTD 2(blk), y2; \
	VPSHUFB q5shuf<>(SB), y2, y2; \
	VPOR q5bits<>(SB), y2, y2; \
	VPCMPEQB q5ff<>(SB), y2, y2; \
	VPANDN q5f0<>(SB), y2, y2; \
	VPOR y2, dst, dst

// Q5_0MAC(acc, codes, abs, act, d) adds the block's eight lane sums for one
// weight row (signed codes, their magnitudes) and one activation row (act)
// times the combined scale d (eight equal lanes, in memory) to acc, fused:
// the row kernel's arithmetic exactly. Uses Y15.
#define Q5_0MAC(acc, codes, abs, act, d) \
	VPSIGNB codes, act, Y15; \
	VPMADDUBSW Y15, abs, Y15; \
	VPMADDWD q5ones16<>(SB), Y15, Y15; \
	VCVTDQ2PS Y15, Y15; \
	VFMADD231PS d, Y15, acc

// Q5_0ACT(act, xd, acc0, acc1, d0, d1) does one activation row of a block:
// the combined scales of both weight rows (Y12, Y13 times the row's scale
// lanes) go to the frame slots d0, d1, then both MACs.
#define Q5_0ACT(act, xd, acc0, acc1, d0, d1) \
	VMOVDQU act, Y14; \
	VMULPS xd, Y12, Y15; \
	VMOVUPS Y15, d0; \
	VMULPS xd, Y13, Y15; \
	VMOVUPS Y15, d1; \
	Q5_0MAC(acc0, Y8, Y10, Y14, d0); \
	Q5_0MAC(acc1, Y9, Y11, Y14, d1)

// func q5_0Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)
// Two Q5_0 weight rows (row stride ws bytes) times four Q8_0 activation rows
// (code stride xs bytes, scales 8 times each in xd8 with stride 8*nb) over nb
// blocks: out[b*os+r] for r < 2, b < 4, each equal to q5_0DotAVX of that
// pair bit for bit (same lanes, same fused steps, same final sum). Each
// weight block is decoded once for four activation rows.
TEXT ·q5_0Tile2x4(SB), NOSPLIT, $64-128
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

t24q5block:
	TESTQ CX, CX
	JZ    t24q5sum
	Q5_0SIGNED(SI, Y8, X14, Y14, X15, Y15)
	Q5_0SIGNED(R8, Y9, X14, Y14, X15, Y15)
	VPSIGNB Y8, Y8, Y10
	VPSIGNB Y9, Y9, Y11
	VCVTPH2PS (SI), X12
	VCVTPH2PS (R8), X13
	VBROADCASTSS X12, Y12
	VBROADCASTSS X13, Y13
	Q5_0ACT((DI), (DX), Y0, Y1, 0(SP), 32(SP))
	Q5_0ACT((DI)(R9*1), (DX)(R10*1), Y2, Y3, 0(SP), 32(SP))
	Q5_0ACT((R11), (R12), Y4, Y5, 0(SP), 32(SP))
	Q5_0ACT((R11)(R9*1), (R12)(R10*1), Y6, Y7, 0(SP), 32(SP))
	ADDQ $22, SI
	ADDQ $22, R8
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, DX
	ADDQ $32, R12
	DECQ CX
	JMP  t24q5block

t24q5sum:
	// Y(2b+r) holds activation row b, weight row r.
	MOVQ out_base+96(FP), DI
	MOVQ os+120(FP), R9
	SHLQ $2, R9
	HSUM8(Y0, X0, X8)
	HSUM8(Y1, X1, X8)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	ADDQ R9, DI
	HSUM8(Y2, X2, X8)
	HSUM8(Y3, X3, X8)
	VMOVSS X2, (DI)
	VMOVSS X3, 4(DI)
	ADDQ R9, DI
	HSUM8(Y4, X4, X8)
	HSUM8(Y5, X5, X8)
	VMOVSS X4, (DI)
	VMOVSS X5, 4(DI)
	ADDQ R9, DI
	HSUM8(Y6, X6, X8)
	HSUM8(Y7, X7, X8)
	VMOVSS X6, (DI)
	VMOVSS X7, 4(DI)
	VZEROUPPER
	RET

// func q5kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)
// out[r] = the product of row r of w (rows of rb bytes) with one Q8_K
// activation row, for r < len(out): decode's loop over the rows without a
// call per row. The row body is q5kDotAVX's, so out[r] equals q5kDotAVX of
// that row bit for bit.
TEXT ·q5kRows(SB), NOSPLIT, $72-128
	// 48(SP): the current row, 56(SP): its output, 64(SP): rows left
	MOVQ w_base+0(FP), AX
	MOVQ AX, 48(SP)
	MOVQ out_base+104(FP), AX
	MOVQ AX, 56(SP)
	MOVQ out_len+112(FP), AX
	MOVQ AX, 64(SP)
	VMOVDQU q5nib<>(SB), Y15
	VMOVDQU q5x01<>(SB), Y14
	VMOVDQU q5x02<>(SB), Y7

q5krow:
	MOVQ 64(SP), AX
	TESTQ AX, AX
	JZ    q5krowsdone
	MOVQ 48(SP), SI
	MOVQ xq_base+32(FP), DI
	MOVQ xd_base+56(FP), DX
	MOVQ xd_len+64(FP), CX
	MOVQ xs_base+80(FP), BX
	VXORPS Y0, Y0, Y0          // float sum of d*scale parts
	VXORPS X1, X1, X1          // float sum of -dmin*min parts

q5krblock:
	TESTQ CX, CX
	JZ    q5krsum
	Q5KBLOCKHEAD

q5krchunk:
	Q5KCHUNKSTEP
	CMPQ R13, $128
	JB   q5krchunk

	VCVTDQ2PS Y8, Y8
	VFMADD231PS Y8, Y4, Y0

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q5krblock

q5krsum:
	HSUM8(Y0, X0, X2)
	VADDSS X1, X0, X0
	MOVQ 56(SP), AX
	VMOVSS X0, (AX)
	ADDQ $4, AX
	MOVQ AX, 56(SP)
	MOVQ rb+24(FP), AX
	ADDQ AX, 48(SP)
	DECQ 64(SP)
	JMP  q5krow

q5krowsdone:
	VZEROUPPER
	RET
