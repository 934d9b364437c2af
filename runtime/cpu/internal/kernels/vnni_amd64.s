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

#define PAIR(WREG, DWREG, XC, XD, ACC) \
	VMOVDQU XC, Y13; \
	VPDPBUSD Y12, WREG, Y13; \
	VCVTDQ2PS Y13, Y13; \
	VMULPS XD, Y13, Y13; \
	VFMADD231PS DWREG, Y13, ACC

#define XROW(XSRC, XC, XD, A0, A1, A2, A3) \
	VMOVDQU XSRC, Y12; \
	PAIR(Y0, Y4, XC, XD, A0); \
	PAIR(Y1, Y5, XC, XD, A1); \
	PAIR(Y2, Y6, XC, XD, A2); \
	PAIR(Y3, Y7, XC, XD, A3)

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

// func q8Tile4x4VNNI(w []byte, ws int, xq []int8, xs int, xc []int32, xd8 []float32, nb int, out []float32, os int)
// Four Q8_0 rows (stride ws bytes) times four Q8 activation rows (codes at
// stride xs, their offset corrections xc at the same byte stride, scales
// xd8) over nb blocks: out[b*os+r], r, b < 4. The weight codes are offset
// to unsigned (w XOR 0x80 = w+128) as they are loaded, so the correction
// -128*(sum of four activation codes) per lane belongs to the activations
// and is computed once per product (q8CorrGo), not once per weight tile.
// Each lane then holds exactly the integer of a signed dot product of its
// four codes before the float steps (convert, times the activation scale,
// fused multiply-add of the weight scale).
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
	VPXOR 2(SI), Y14, Y0
	VPXOR 2(SI)(R8*1), Y14, Y1
	VPXOR 2(R9), Y14, Y2
	VPXOR 2(R9)(R8*1), Y14, Y3
	VPBROADCASTW (SI), X4
	VCVTPH2PS X4, Y4
	VPBROADCASTW (SI)(R8*1), X5
	VCVTPH2PS X5, Y5
	VPBROADCASTW (R9), X6
	VCVTPH2PS X6, Y6
	VPBROADCASTW (R9)(R8*1), X7
	VCVTPH2PS X7, Y7
	XROW((DI), (R10), (DX), Y16, Y17, Y18, Y19)
	XROW((DI)(R11*1), (R10)(R11*1), (DX)(R14*1), Y20, Y21, Y22, Y23)
	XROW((R12), (BX), (AX), Y24, Y25, Y26, Y27)
	XROW((R12)(R11*1), (BX)(R11*1), (AX)(R14*1), Y28, Y29, Y30, Y31)
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
	FOLD4(Y16, Y17, Y18, Y19, (DI))
	FOLD4(Y20, Y21, Y22, Y23, (DI)(R11*1))
	LEAQ (DI)(R11*2), DI
	FOLD4(Y24, Y25, Y26, Y27, (DI))
	FOLD4(Y28, Y29, Y30, Y31, (DI)(R11*1))
	VZEROUPPER
	RET
