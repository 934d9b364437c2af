//go:build amd64 && !purego

#include "textflag.h"

// Q8_0 x Q8 tiles with AVX512-VNNI (VPDPBUSD on 256-bit registers, which
// also opens registers Y16..Y31). VPDPBUSD multiplies unsigned by signed
// bytes, so activations are offset to x+128 (x XOR 0x80) and the excess,
// 128 * (sum of the weight block), is the accumulator's starting value.

DATA bytes80<>+0(SB)/8, $0x8080808080808080
DATA bytes80<>+8(SB)/8, $0x8080808080808080
DATA bytes80<>+16(SB)/8, $0x8080808080808080
DATA bytes80<>+24(SB)/8, $0x8080808080808080
GLOBL bytes80<>(SB), RODATA|NOPTR, $32

// func q8PrepVNNI(w []byte, ws int, nb int, prep []byte)
// For four Q8_0 rows (stride ws bytes) and each of nb blocks, writes 64 bytes
// per row at prep[(k*4+r)*64:]: eight int32 lanes whose sum is
// -128*sum(block codes) (each lane covers four codes), then the block scale
// as eight float32.
TEXT ·q8PrepVNNI(SB), NOSPLIT, $0-64
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ nb+32(FP), CX
	MOVQ prep_base+40(FP), DI
	VMOVDQU bytes80<>(SB), Y14
	VPXOR Y15, Y15, Y15

prepblock:
	TESTQ CX, CX
	JZ    prepdone
	MOVQ SI, DX
	MOVQ $4, AX

preprow:
	VMOVDQU 2(DX), Y0
	VPXOR Y1, Y1, Y1
	VPDPBUSD Y0, Y14, Y1       // 128 * codes, four per lane
	VPSUBD Y1, Y15, Y1         // negated
	VMOVDQU Y1, (DI)
	VCVTPH2PS (DX), X2
	VBROADCASTSS X2, Y2
	VMOVUPS Y2, 32(DI)
	ADDQ R8, DX
	ADDQ $64, DI
	DECQ AX
	JNZ  preprow

	ADDQ $34, SI
	DECQ CX
	JMP  prepblock

prepdone:
	VZEROUPPER
	RET

#define PAIR(WREG, ROFF, XD, ACC) \
	VMOVDQU ROFF(BX), Y13; \
	VPDPBUSD WREG, Y12, Y13; \
	VCVTDQ2PS Y13, Y13; \
	VMULPS XD, Y13, Y13; \
	VFMADD231PS ROFF+32(BX), Y13, ACC

#define XROW(XSRC, XD, A0, A1, A2, A3) \
	VMOVDQU XSRC, Y12; \
	VPXOR Y14, Y12, Y12; \
	PAIR(Y0, 0, XD, A0); \
	PAIR(Y1, 64, XD, A1); \
	PAIR(Y2, 128, XD, A2); \
	PAIR(Y3, 192, XD, A3)

#define FOLD4(A0, A1, A2, A3, DST) \
	VMOVAPS A0, Y0; \
	VMOVAPS A1, Y1; \
	VMOVAPS A2, Y2; \
	VMOVAPS A3, Y3; \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VMOVUPS X0, DST

// func q8Tile4x4VNNI(w []byte, ws int, prep []byte, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)
// Four Q8_0 rows times four Q8 activation rows over nb blocks, with the
// rows' offsets and scales prepared by q8PrepVNNI: out[b*os+r], r, b < 4.
TEXT ·q8Tile4x4VNNI(SB), NOSPLIT, $0-152
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ prep_base+32(FP), BX
	MOVQ xq_base+56(FP), DI
	MOVQ xs+80(FP), R11
	MOVQ xd8_base+88(FP), DX
	MOVQ nb+112(FP), CX
	LEAQ (SI)(R8*2), R9        // weight rows 2, 3
	LEAQ (DI)(R11*2), R12      // activation rows 2, 3
	MOVQ CX, R14
	SHLQ $5, R14               // scale stride: 8 floats per block
	LEAQ (DX)(R14*2), AX
	VMOVDQU bytes80<>(SB), Y14
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	VPXORD Y28, Y28, Y28
	VPXORD Y29, Y29, Y29
	VPXORD Y30, Y30, Y30
	VPXORD Y31, Y31, Y31

vtblock:
	TESTQ CX, CX
	JZ    vtsum
	VMOVDQU 2(SI), Y0
	VMOVDQU 2(SI)(R8*1), Y1
	VMOVDQU 2(R9), Y2
	VMOVDQU 2(R9)(R8*1), Y3
	XROW((DI), (DX), Y16, Y17, Y18, Y19)
	XROW((DI)(R11*1), (DX)(R14*1), Y20, Y21, Y22, Y23)
	XROW((R12), (AX), Y24, Y25, Y26, Y27)
	XROW((R12)(R11*1), (AX)(R14*1), Y28, Y29, Y30, Y31)
	ADDQ $34, SI
	ADDQ $34, R9
	ADDQ $256, BX
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $32, DX
	ADDQ $32, AX
	DECQ CX
	JMP  vtblock

vtsum:
	MOVQ out_base+120(FP), DI
	MOVQ os+144(FP), R11
	SHLQ $2, R11
	FOLD4(Y16, Y17, Y18, Y19, (DI))
	FOLD4(Y20, Y21, Y22, Y23, (DI)(R11*1))
	LEAQ (DI)(R11*2), DI
	FOLD4(Y24, Y25, Y26, Y27, (DI))
	FOLD4(Y28, Y29, Y30, Y31, (DI)(R11*1))
	VZEROUPPER
	RET
