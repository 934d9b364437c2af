//go:build amd64 && !purego

#include "textflag.h"
#include "kscales_amd64.h"
#include "hsum_amd64.h"

// Q5_K batch tile: one weight row against four Q8_K activation rows, so the
// scales, the mins and the five-bit codes of each super-block are unpacked
// once for four products. Every product adds in exactly the order of
// q5kDotAVX (q5_amd64.s), so the results are bit-identical to it.

DATA q5ktnib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5ktnib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5ktnib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q5ktnib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q5ktnib<>(SB), RODATA|NOPTR, $32

DATA q5kt01<>+0(SB)/8, $0x0101010101010101
DATA q5kt01<>+8(SB)/8, $0x0101010101010101
DATA q5kt01<>+16(SB)/8, $0x0101010101010101
DATA q5kt01<>+24(SB)/8, $0x0101010101010101
GLOBL q5kt01<>(SB), RODATA|NOPTR, $32

DATA q5kt02<>+0(SB)/8, $0x0202020202020202
DATA q5kt02<>+8(SB)/8, $0x0202020202020202
DATA q5kt02<>+16(SB)/8, $0x0202020202020202
DATA q5kt02<>+24(SB)/8, $0x0202020202020202
GLOBL q5kt02<>(SB), RODATA|NOPTR, $32

// Frame: 0..31 the 16 unpacked words (8 scales, 8 mins) of the current
// super-block; 32+32a the 8-lane float sum of activation a's scaled parts;
// 160+16a the scalar float sum of its min parts.

// Q5KMUL adds the products of one activation's 64 codes at XA, XB with the
// codes Y9 (sub-block 2k) and Y10 (2k+1), weighted by the broadcast scales
// Y11 and Y12, to IACC.
#define Q5KMUL(XA, XB, IACC) \
	VPMADDUBSW XA, Y9, Y13; \
	VPMADDUBSW XB, Y10, Y14; \
	VPMADDWD Y11, Y13, Y13; \
	VPMADDWD Y12, Y14, Y14; \
	VPADDD Y13, IACC, IACC; \
	VPADDD Y14, IACC, IACC

// Q5KCHUNK handles nibble bytes 32k..32k+31 of the super-block (sub-blocks
// 2k and 2k+1) for all four activations; Y4 holds qh shifted right by 2k.
#define Q5KCHUNK(WOFF, SOFF0, SOFF1, XOFF0, XOFF1) \
	VMOVDQU WOFF(SI), Y9; \
	VPSRLW $4, Y9, Y10; \
	VPAND Y15, Y9, Y9; \
	VPAND Y15, Y10, Y10; \
	VPAND Y5, Y4, Y13; \
	VPSLLW $4, Y13, Y13; \
	VPOR Y13, Y9, Y9; \
	VPAND Y6, Y4, Y14; \
	VPSLLW $3, Y14, Y14; \
	VPOR Y14, Y10, Y10; \
	VPSRLW $2, Y4, Y4; \
	VPBROADCASTW SOFF0(SP), Y11; \
	VPBROADCASTW SOFF1(SP), Y12; \
	Q5KMUL(XOFF0(DI), XOFF1(DI), Y0); \
	Q5KMUL(XOFF0(DI)(R8*1), XOFF1(DI)(R8*1), Y1); \
	Q5KMUL(XOFF0(DI)(R8*2), XOFF1(DI)(R8*2), Y2); \
	Q5KMUL(XOFF0(R9)(R8*2), XOFF1(R9)(R8*2), Y3)

// Q5KACT adds activation a's super-block part: its integer sum IACC (8 int32
// lanes), its scale at XD and its 16 sub-block sums at XS; X10 holds d and
// dmin, X9 the mins.
#define Q5KACT(IACC, XD, XS, ACC0, ACC1) \
	VBROADCASTSS XD, X4; \
	VMULPS X4, X10, X4; \
	VBROADCASTSS X4, Y11; \
	VMOVSHDUP X4, X12; \
	VBROADCASTSS X12, X12; \
	VMOVDQU XS, Y7; \
	VEXTRACTI128 $1, Y7, X8; \
	VPHADDW X8, X7, X7; \
	VPMADDWD X9, X7, X7; \
	VPHADDD X7, X7, X7; \
	VPHADDD X7, X7, X7; \
	VCVTDQ2PS X7, X7; \
	VMOVSS ACC1(SP), X14; \
	VFNMADD231SS X7, X12, X14; \
	VMOVSS X14, ACC1(SP); \
	VCVTDQ2PS IACC, IACC; \
	VMOVUPS ACC0(SP), Y13; \
	VFMADD231PS IACC, Y11, Y13; \
	VMOVUPS Y13, ACC0(SP)

// Q5KSUM writes the reduced sum of activation a, as q5kDotAVX reduces it
// (HSUM8, then the min parts).
#define Q5KSUM(ACC0, ACC1, DST) \
	VMOVUPS ACC0(SP), Y0; \
	HSUM8(Y0, X0, X2); \
	VMOVSS ACC1(SP), X1; \
	VADDSS X1, X0, X0; \
	VMOVSS X0, DST

// func q5kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)
// w is one row of nb super-blocks; xq, xd and xs hold four activation rows
// one after the other (256*nb codes, nb scales and 16*nb sums each); the
// product with activation a goes to out[a*os].
TEXT ·q5kTile1x4(SB), NOSPLIT, $224-136
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xs_base+72(FP), BX
	MOVQ nb+96(FP), CX
	MOVQ CX, R8
	SHLQ $8, R8                // activation stride in codes
	LEAQ (DI)(R8*1), R9        // activation 1; activation 3 is (R9)(R8*2)
	MOVQ CX, R10
	SHLQ $2, R10               // activation stride in scale bytes
	MOVQ CX, R11
	SHLQ $5, R11               // activation stride in sum bytes
	VMOVDQU q5ktnib<>(SB), Y15
	VMOVDQU q5kt01<>(SB), Y5
	VMOVDQU q5kt02<>(SB), Y6
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)

q5ktblock:
	TESTQ CX, CX
	JZ    q5ktdone
	// scales and mins, unpacked as in q5kDotAVX
	KSCALESMINS
	VMOVDQU Y2, 0(SP)

	VMOVDQU 16(SI), Y4         // qh, shifted right by 2 per chunk
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q5KCHUNK(48, 0, 2, 0, 32)
	Q5KCHUNK(80, 4, 6, 64, 96)
	Q5KCHUNK(112, 8, 10, 128, 160)
	Q5KCHUNK(144, 12, 14, 192, 224)

	VCVTPH2PS (SI), X10        // lanes: d, dmin
	VMOVDQU 16(SP), X9         // the mins
	Q5KACT(Y0, (DX), (BX), 32, 160)
	Q5KACT(Y1, (DX)(R10*1), (BX)(R11*1), 64, 176)
	Q5KACT(Y2, (DX)(R10*2), (BX)(R11*2), 96, 192)
	LEAQ (DX)(R10*2), AX
	LEAQ (BX)(R11*2), R12
	Q5KACT(Y3, (AX)(R10*1), (R12)(R11*1), 128, 208)

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q5ktblock

q5ktdone:
	MOVQ out_base+104(FP), DI
	MOVQ os+128(FP), R8
	SHLQ $2, R8
	Q5KSUM(32, 160, (DI))
	Q5KSUM(64, 176, (DI)(R8*1))
	Q5KSUM(96, 192, (DI)(R8*2))
	LEAQ (DI)(R8*2), DI
	Q5KSUM(128, 208, (DI)(R8*1))
	VZEROUPPER
	RET
