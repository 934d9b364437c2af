//go:build amd64 && !purego

#include "textflag.h"
#include "kscales_amd64.h"
#include "hsum_amd64.h"

DATA q4ktmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4ktmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4ktmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4ktmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4ktmask<>(SB), RODATA|NOPTR, $32

// Q4_K batch tile: one weight row against four Q8_K activation rows, so the
// 6-bit scales, the mins and the nibbles of each super-block are unpacked
// once for four products. Every product adds in exactly the order of
// q4kDotAVX (kquant_amd64.s), so the results are bit-identical to it.

// Frame: 0..31 the 16 unpacked words (8 scales, 8 mins) of the current
// super-block; 32+32a the 8-lane float sum of activation a's scaled parts;
// 160+16a the 4-lane float sum of its min parts.

// Q4KACT adds activation a's super-block part: its integer sum IACC (8 int32
// lanes), its scale at XD and its 16 sub-block sums at XS.
#define Q4KACT(IACC, XD, XS, ACC0, ACC1) \
	VBROADCASTSS XD, X4; \
	VMULPS X4, X10, X4; \
	VBROADCASTSS X4, Y5; \
	VMOVSHDUP X4, X6; \
	VBROADCASTSS X6, X6; \
	VMOVDQU XS, Y7; \
	VEXTRACTI128 $1, Y7, X8; \
	VPHADDW X8, X7, X7; \
	VPMADDWD X9, X7, X7; \
	VCVTDQ2PS X7, X7; \
	VMOVUPS ACC1(SP), X8; \
	VFMADD231PS X7, X6, X8; \
	VMOVUPS X8, ACC1(SP); \
	VCVTDQ2PS IACC, IACC; \
	VMOVUPS ACC0(SP), Y8; \
	VFMADD231PS IACC, Y5, Y8; \
	VMOVUPS Y8, ACC0(SP)

// Q4KMUL adds the products of one activation's 64 codes at X with the
// unpacked nibbles Y9 (low) and Y10 (high), weighted by the broadcast
// scales Y11 and Y12, to IACC.
#define Q4KMUL(XA, XB, IACC) \
	VPMADDUBSW XA, Y9, Y13; \
	VPMADDUBSW XB, Y10, Y14; \
	VPMADDWD Y11, Y13, Y13; \
	VPMADDWD Y12, Y14, Y14; \
	VPADDD Y13, IACC, IACC; \
	VPADDD Y14, IACC, IACC

// Q4KCHUNK handles nibble bytes 32k..32k+31 of the super-block (sub-blocks
// 2k and 2k+1) for all four activations.
#define Q4KCHUNK(WOFF, SOFF0, SOFF1, XOFF0, XOFF1) \
	VMOVDQU WOFF(SI), Y9; \
	VPSRLW $4, Y9, Y10; \
	VPAND Y15, Y9, Y9; \
	VPAND Y15, Y10, Y10; \
	VPBROADCASTW SOFF0(SP), Y11; \
	VPBROADCASTW SOFF1(SP), Y12; \
	Q4KMUL(XOFF0(DI), XOFF1(DI), Y0); \
	Q4KMUL(XOFF0(DI)(R8*1), XOFF1(DI)(R8*1), Y1); \
	Q4KMUL(XOFF0(DI)(R8*2), XOFF1(DI)(R8*2), Y2); \
	Q4KMUL(XOFF0(R9)(R8*2), XOFF1(R9)(R8*2), Y3)

// Q4KSUM writes the reduced sum of activation a, as q4kDotAVX reduces it.
#define Q4KSUM(ACC0, ACC1, DST) \
	VMOVUPS ACC0(SP), Y0; \
	HALVES8TO(Y0, X0, X2, X0); \
	VMOVUPS ACC1(SP), X1; \
	VSUBPS X1, X0, X0; \
	HADD4(X0); \
	VMOVSS X0, DST

// func q4kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)
// w is one row of nb super-blocks; xq, xd and xs hold four activation rows
// one after the other (256*nb codes, nb scales and 16*nb sums each); the
// product with activation a goes to out[a*os].
TEXT ·q4kTile1x4(SB), NOSPLIT, $224-136
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
	VMOVDQU q4ktmask<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)

q4ktblock:
	TESTQ CX, CX
	JZ    q4ktdone
	// scales and mins, unpacked as in q4kDotAVX
	KSCALESMINS
	VMOVDQU Y2, 0(SP)

	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	Q4KCHUNK(16, 0, 2, 0, 32)
	Q4KCHUNK(48, 4, 6, 64, 96)
	Q4KCHUNK(80, 8, 10, 128, 160)
	Q4KCHUNK(112, 12, 14, 192, 224)

	VCVTPH2PS (SI), X10        // lanes: d, dmin
	VMOVDQU 16(SP), X9         // the mins
	Q4KACT(Y0, (DX), (BX), 32, 160)
	Q4KACT(Y1, (DX)(R10*1), (BX)(R11*1), 64, 176)
	Q4KACT(Y2, (DX)(R10*2), (BX)(R11*2), 96, 192)
	LEAQ (DX)(R10*2), AX
	LEAQ (BX)(R11*2), R12
	Q4KACT(Y3, (AX)(R10*1), (R12)(R11*1), 128, 208)

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q4ktblock

q4ktdone:
	MOVQ out_base+104(FP), DI
	MOVQ os+128(FP), R8
	SHLQ $2, R8
	Q4KSUM(32, 160, (DI))
	Q4KSUM(64, 176, (DI)(R8*1))
	Q4KSUM(96, 192, (DI)(R8*2))
	LEAQ (DI)(R8*2), DI
	Q4KSUM(128, 208, (DI)(R8*1))
	VZEROUPPER
	RET

// Q4KROWCHUNK adds nibble bytes 32k..32k+31 of the super-block times the
// activation codes at XOFF0(DI), XOFF1(DI) to Y8.
#define Q4KROWCHUNK(WOFF, SOFF0, SOFF1, XOFF0, XOFF1) \
	VMOVDQU WOFF(SI), Y9; \
	VPSRLW $4, Y9, Y10; \
	VPAND Y15, Y9, Y9; \
	VPAND Y15, Y10, Y10; \
	VPMADDUBSW XOFF0(DI), Y9, Y9; \
	VPMADDUBSW XOFF1(DI), Y10, Y10; \
	VPBROADCASTW SOFF0(SP), Y11; \
	VPBROADCASTW SOFF1(SP), Y12; \
	VPMADDWD Y11, Y9, Y9; \
	VPMADDWD Y12, Y10, Y10; \
	VPADDD Y9, Y8, Y8; \
	VPADDD Y10, Y8, Y8

// func q4kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)
// out[r] = the product of row r of w (rows of rb bytes) with one Q8_K
// activation row, for r < len(out): decode's loop over the rows without a
// call per row. Each row adds in exactly q4kDotAVX's order, so out[r] equals
// q4kDotAVX of that row bit for bit.
TEXT ·q4kRows(SB), NOSPLIT, $32-128
	MOVQ w_base+0(FP), R8
	MOVQ rb+24(FP), R9
	MOVQ out_base+104(FP), R10
	MOVQ out_len+112(FP), R11
	VMOVDQU q4ktmask<>(SB), Y15

q4krow:
	TESTQ R11, R11
	JZ    q4krowsdone
	MOVQ R8, SI
	MOVQ xq_base+32(FP), DI
	MOVQ xd_base+56(FP), DX
	MOVQ xd_len+64(FP), CX
	MOVQ xs_base+80(FP), BX
	VXORPS Y0, Y0, Y0          // float sum of d*scale parts
	VXORPS X1, X1, X1          // float sum of dmin*min parts (4 lanes)

q4krblock:
	TESTQ CX, CX
	JZ    q4krsum
	// scales and mins, unpacked as in q4kDotAVX
	KSCALESMINS
	VMOVDQU Y2, 0(SP)
	VEXTRACTI128 $1, Y2, X13   // the mins

	// d*xd and dmin*xd
	VCVTPH2PS (SI), X3         // lanes: d, dmin
	VBROADCASTSS (DX), X4
	VMULPS X4, X3, X3
	VBROADCASTSS X3, Y4        // d*xd
	VMOVSHDUP X3, X5
	VBROADCASTSS X5, X5        // dmin*xd

	// mins: sum_j m_j * (bsum[2j] + bsum[2j+1])
	VMOVDQU (BX), Y6
	VEXTRACTI128 $1, Y6, X7
	VPHADDW X7, X6, X6         // 8 sub-block sums
	VPMADDWD X13, X6, X6
	VCVTDQ2PS X6, X6
	VFMADD231PS X6, X5, X1

	VPXOR Y8, Y8, Y8
	Q4KROWCHUNK(16, 0, 2, 0, 32)
	Q4KROWCHUNK(48, 4, 6, 64, 96)
	Q4KROWCHUNK(80, 8, 10, 128, 160)
	Q4KROWCHUNK(112, 12, 14, 192, 224)
	VCVTDQ2PS Y8, Y8
	VFMADD231PS Y8, Y4, Y0

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q4krblock

q4krsum:
	HADDSUBSUM8(Y0, X0, X1, X2)
	VMOVSS X0, (R10)
	ADDQ R9, R8
	ADDQ $4, R10
	DECQ R11
	JMP  q4krow

q4krowsdone:
	VZEROUPPER
	RET

// Q4KCHUNK2 is Q4KCHUNK for the two-row tile: it handles nibble bytes 32k..32k+31 of the super-block (sub-blocks
// 2k and 2k+1) for two activations.
#define Q4KCHUNK2(WOFF, SOFF0, SOFF1, XOFF0, XOFF1) \
	VMOVDQU WOFF(SI), Y9; \
	VPSRLW $4, Y9, Y10; \
	VPAND Y15, Y9, Y9; \
	VPAND Y15, Y10, Y10; \
	VPBROADCASTW SOFF0(SP), Y11; \
	VPBROADCASTW SOFF1(SP), Y12; \
	Q4KMUL(XOFF0(DI), XOFF1(DI), Y0); \
	Q4KMUL(XOFF0(DI)(R8*1), XOFF1(DI)(R8*1), Y1)

// func q4kTile1x2(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)
// q4kTile1x4 for two activation rows (a batch of 2 or 3, or the rows a
// batch leaves after its groups of four), bit-identical to q4kDotAVX too:
// w is one row of nb super-blocks; xq, xd and xs hold two activation rows
// one after the other (256*nb codes, nb scales and 16*nb sums each); the
// product with activation a goes to out[a*os].
TEXT ·q4kTile1x2(SB), NOSPLIT, $224-136
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xs_base+72(FP), BX
	MOVQ nb+96(FP), CX
	MOVQ CX, R8
	SHLQ $8, R8                // activation stride in codes
	LEAQ (DI)(R8*1), R9        // activation 1 (R9 is unused here)
	MOVQ CX, R10
	SHLQ $2, R10               // activation stride in scale bytes
	MOVQ CX, R11
	SHLQ $5, R11               // activation stride in sum bytes
	VMOVDQU q4ktmask<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)

q4kt2block:
	TESTQ CX, CX
	JZ    q4kt2done
	// scales and mins, unpacked as in q4kDotAVX
	KSCALESMINS
	VMOVDQU Y2, 0(SP)

	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	Q4KCHUNK2(16, 0, 2, 0, 32)
	Q4KCHUNK2(48, 4, 6, 64, 96)
	Q4KCHUNK2(80, 8, 10, 128, 160)
	Q4KCHUNK2(112, 12, 14, 192, 224)

	VCVTPH2PS (SI), X10        // lanes: d, dmin
	VMOVDQU 16(SP), X9         // the mins
	Q4KACT(Y0, (DX), (BX), 32, 160)
	Q4KACT(Y1, (DX)(R10*1), (BX)(R11*1), 64, 176)

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q4kt2block

q4kt2done:
	MOVQ out_base+104(FP), DI
	MOVQ os+128(FP), R8
	SHLQ $2, R8
	Q4KSUM(32, 160, (DI))
	Q4KSUM(64, 176, (DI)(R8*1))
	VZEROUPPER
	RET

