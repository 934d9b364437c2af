//go:build amd64 && !purego

#include "textflag.h"
#include "q6k_amd64.h"
#include "hsum_amd64.h"

// Q6_K batch tile: one weight row against four Q8_K activation rows, so the
// 6-bit codes and the scales of each super-block are unpacked once for four
// products. Every product adds in exactly the order of q6kDotAVX
// (kquant_amd64.s), so the results are bit-identical to it.

DATA q6ktmask4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6ktmask4<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6ktmask4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6ktmask4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q6ktmask4<>(SB), RODATA|NOPTR, $32

DATA q6ktmask30<>+0(SB)/8, $0x3030303030303030
DATA q6ktmask30<>+8(SB)/8, $0x3030303030303030
DATA q6ktmask30<>+16(SB)/8, $0x3030303030303030
DATA q6ktmask30<>+24(SB)/8, $0x3030303030303030
GLOBL q6ktmask30<>(SB), RODATA|NOPTR, $32

DATA q6ktm32<>+0(SB)/8, $0x2020202020202020
DATA q6ktm32<>+8(SB)/8, $0x2020202020202020
DATA q6ktm32<>+16(SB)/8, $0x2020202020202020
DATA q6ktm32<>+24(SB)/8, $0x2020202020202020
GLOBL q6ktm32<>(SB), RODATA|NOPTR, $32

// q6ktscale: VPSHUFB controls, as kq6scale in kquant_amd64.s.
DATA q6ktscale<>+0(SB)/8, $0x0100010001000100
DATA q6ktscale<>+8(SB)/8, $0x0100010001000100
DATA q6ktscale<>+16(SB)/8, $0x0302030203020302
DATA q6ktscale<>+24(SB)/8, $0x0302030203020302
DATA q6ktscale<>+32(SB)/8, $0x0504050405040504
DATA q6ktscale<>+40(SB)/8, $0x0504050405040504
DATA q6ktscale<>+48(SB)/8, $0x0706070607060706
DATA q6ktscale<>+56(SB)/8, $0x0706070607060706
DATA q6ktscale<>+64(SB)/8, $0x0908090809080908
DATA q6ktscale<>+72(SB)/8, $0x0908090809080908
DATA q6ktscale<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6ktscale<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6ktscale<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6ktscale<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6ktscale<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6ktscale<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6ktscale<>(SB), RODATA|NOPTR, $128

// Frame: 32a the 8-lane float sum of activation a.

// Q6KSCALES puts the scale pairs of half h's four codes registers (scales
// at byte SOFF of the block) in Y6, Y7, Y8, Y10: sc[8h+2q] in the low 128
// bits and sc[8h+2q+1] in the high ones for quarter q.
#define Q6KSCALES(SOFF) \
	VPMOVSXBW SOFF(SI), X4; \
	VINSERTI128 $1, X4, Y4, Y4; \
	VPSHUFB q6ktscale<>+0(SB), Y4, Y6; \
	VPSHUFB q6ktscale<>+32(SB), Y4, Y7; \
	VPSHUFB q6ktscale<>+64(SB), Y4, Y8; \
	VPSHUFB q6ktscale<>+96(SB), Y4, Y10

// The tile forms ggml's integer lanes as q6kDotAVX does: unsigned codes
// q times the activations x, minus the activations' pair sums
// 32*(x+x') (q6kPairSums, made once per MatMul call), in each word; so
// the words, the lanes and the float results are ggml's exactly.

// Q6KMUL adds one activation's 128 codes of the half (XA..XD, four runs of
// 32 codes; PA..PD their pair sums) times the unsigned codes Y9, Y11, Y12,
// Y13 and their scale pairs Y6, Y7, Y8, Y10 to IACC.
#define Q6KMUL(XA, XB, XC, XD, PA, PB, PC, PD, IACC) \
	VPMADDUBSW XA, Y9, Y4; \
	VPMADDUBSW XB, Y11, Y5; \
	VPSUBW PA, Y4, Y4; \
	VPSUBW PB, Y5, Y5; \
	VPMADDWD Y6, Y4, Y4; \
	VPMADDWD Y7, Y5, Y5; \
	VPADDD Y4, IACC, IACC; \
	VPADDD Y5, IACC, IACC; \
	VPMADDUBSW XC, Y12, Y4; \
	VPMADDUBSW XD, Y13, Y5; \
	VPSUBW PC, Y4, Y4; \
	VPSUBW PD, Y5, Y5; \
	VPMADDWD Y8, Y4, Y4; \
	VPMADDWD Y10, Y5, Y5; \
	VPADDD Y4, IACC, IACC; \
	VPADDD Y5, IACC, IACC

// Q6KHALF runs half h (activation codes and pair sums from offset XO)
// for all four activations.
#define Q6KHALF(XO0, XO1, XO2, XO3) \
	Q6KMUL(XO0(DI), XO1(DI), XO2(DI), XO3(DI), XO0(BX), XO1(BX), XO2(BX), XO3(BX), Y0); \
	Q6KMUL(XO0(DI)(R8*1), XO1(DI)(R8*1), XO2(DI)(R8*1), XO3(DI)(R8*1), XO0(BX)(R8*1), XO1(BX)(R8*1), XO2(BX)(R8*1), XO3(BX)(R8*1), Y1); \
	Q6KMUL(XO0(DI)(R8*2), XO1(DI)(R8*2), XO2(DI)(R8*2), XO3(DI)(R8*2), XO0(BX)(R8*2), XO1(BX)(R8*2), XO2(BX)(R8*2), XO3(BX)(R8*2), Y2); \
	Q6KMUL(XO0(R9)(R8*2), XO1(R9)(R8*2), XO2(R9)(R8*2), XO3(R9)(R8*2), XO0(R11)(R8*2), XO1(R11)(R8*2), XO2(R11)(R8*2), XO3(R11)(R8*2), Y3)

// Q6KACT adds activation a's super-block part d*xd*IACC to its float sum.
#define Q6KACT(XD, IACC, ACC) \
	VMULSS XD, X6, X7; \
	VBROADCASTSS X7, Y7; \
	VCVTDQ2PS IACC, IACC; \
	VMOVUPS ACC(SP), Y8; \
	VFMADD231PS IACC, Y7, Y8; \
	VMOVUPS Y8, ACC(SP)

// Q6KSUM writes the reduced sum of activation a, as q6kDotAVX reduces it.
#define Q6KSUM(ACC, DST) \
	VMOVUPS ACC(SP), Y0; \
	HSUM8(Y0, X0, X2); \
	VMOVSS X0, DST

// func q6kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)
// w is one row of nb super-blocks; xq, xd and xs hold four activation rows
// one after the other (256*nb codes, nb scales and 128*nb pair sums,
// q6kPairSums, each); the product with activation a goes to out[a*os].
TEXT ·q6kTile1x4(SB), NOSPLIT, $128-136
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ nb+96(FP), CX
	MOVQ CX, R8
	SHLQ $8, R8                // activation stride in codes
	LEAQ (DI)(R8*1), R9        // activation 1; activation 3 is (R9)(R8*2)
	MOVQ xs_base+72(FP), BX    // pair sums: 256*nb bytes per activation too
	LEAQ (BX)(R8*1), R11
	MOVQ CX, R10
	SHLQ $2, R10               // activation stride in scale bytes
	VMOVDQU q6ktmask4<>(SB), Y15
	VMOVDQU q6ktmask30<>(SB), Y14
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)

q6ktblock:
	TESTQ CX, CX
	JZ    q6ktdone
	VPXOR Y0, Y0, Y0           // the four activations' int32 lanes
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

	Q6KUNPACK(0, 32, 128)
	Q6KSCALES(192)
	Q6KHALF(0, 32, 64, 96)
	Q6KUNPACK(64, 96, 160)
	Q6KSCALES(200)
	Q6KHALF(128, 160, 192, 224)

	MOVWLZX 208(SI), R12       // d is the block's last 2 bytes: load only those
	VMOVD R12, X6
	VCVTPH2PS X6, X6
	Q6KACT((DX), Y0, 0)
	Q6KACT((DX)(R10*1), Y1, 32)
	Q6KACT((DX)(R10*2), Y2, 64)
	LEAQ (DX)(R10*2), AX
	Q6KACT((AX)(R10*1), Y3, 96)

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, BX
	ADDQ $256, R11
	ADDQ $4, DX
	DECQ CX
	JMP  q6ktblock

q6ktdone:
	MOVQ out_base+104(FP), DI
	MOVQ os+128(FP), R8
	SHLQ $2, R8
	Q6KSUM(0, (DI))
	Q6KSUM(32, (DI)(R8*1))
	Q6KSUM(64, (DI)(R8*2))
	LEAQ (DI)(R8*2), DI
	Q6KSUM(96, (DI)(R8*1))
	VZEROUPPER
	RET

// func q6kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)
// out[r] = the product of row r of w (rows of rb bytes) with one Q8_K
// activation row, for r < len(out): decode's loop over the rows without a
// call per row. The row body is q6kDotAVX's, so out[r] equals q6kDotAVX of
// that row bit for bit; xs is its q6kPairSums.
TEXT ·q6kRows(SB), NOSPLIT, $0-128
	MOVQ w_base+0(FP), R9
	MOVQ rb+24(FP), R10
	MOVQ out_base+104(FP), R11
	MOVQ out_len+112(FP), R12
	VMOVDQU q6ktmask4<>(SB), Y15
	VMOVDQU q6ktmask30<>(SB), Y14

q6krow:
	TESTQ R12, R12
	JZ    q6krowsdone
	MOVQ R9, SI
	MOVQ xq_base+32(FP), DI
	MOVQ xd_base+56(FP), DX
	MOVQ xd_len+64(FP), CX
	MOVQ xs_base+80(FP), BX
	VXORPS Y0, Y0, Y0

q6krblock:
	TESTQ CX, CX
	JZ    q6krsum
	VPXOR Y8, Y8, Y8           // eight int32 lanes, as ggml's sumi
	Q6KROWHALF(0, 32, 128, 0, 192, q6ktscale<>)
	Q6KROWHALF(64, 96, 160, 128, 200, q6ktscale<>)

	MOVWLZX 208(SI), R8        // d is the block's last 2 bytes: load only those
	VMOVD R8, X3
	VCVTPH2PS X3, X3
	VMULSS (DX), X3, X3
	VBROADCASTSS X3, Y3
	VCVTDQ2PS Y8, Y8
	VFMADD231PS Y8, Y3, Y0

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $256, BX
	ADDQ $4, DX
	DECQ CX
	JMP  q6krblock

q6krsum:
	HSUM8(Y0, X0, X2)          // as q6kDotAVX
	VMOVSS X0, (R11)
	ADDQ R10, R9
	ADDQ $4, R11
	DECQ R12
	JMP  q6krow

q6krowsdone:
	VZEROUPPER
	RET

// func q6kPairSumsAVX(xq []int8, xm []int16)
// xm[i] = 32*(xq[2i]+xq[2i+1]) for len(xq) a multiple of 32: the words
// ggml's Q6_K dot product makes with _mm256_maddubs_epi16(m32s, q8).
TEXT ·q6kPairSumsAVX(SB), NOSPLIT, $0-48
	MOVQ xq_base+0(FP), SI
	MOVQ xq_len+8(FP), CX
	MOVQ xm_base+24(FP), DI
	SHRQ $5, CX
	VMOVDQU q6ktm32<>(SB), Y1

q6kpairs:
	TESTQ CX, CX
	JZ    q6kpairsdone
	VPMADDUBSW (SI), Y1, Y0
	VMOVDQU Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JMP  q6kpairs

q6kpairsdone:
	VZEROUPPER
	RET
