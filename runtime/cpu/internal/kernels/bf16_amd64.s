//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// BF16 products in the order of VDPBF16PS (bf16order.go): a dword of a
// bfloat16 row holds the pair (2j, 2j+1); shifting it left by 16 gives the
// even element as a float32, masking off the low half the odd one. Both
// weights and activations are bfloat16 here, so every product is exact and
// a fused multiply-add rounds like VDPBF16PS's multiply and add: lane j adds
// the odd product, then the even one.

DATA bf16hi<>+0(SB)/4, $0xffff0000
GLOBL bf16hi<>(SB), RODATA|NOPTR, $4

// BF16PAIRS adds the 16 element pairs at woff(wp) (weights) and xoff(xp)
// (activations), eight lanes, into acc; Y15 holds the 0xffff0000 mask and
// t0..t3 are clobbered.
#define BF16PAIRS(woff, wp, xoff, xp, acc, t0, t1, t2, t3) \
	VMOVDQU woff(wp), t1; \
	VPSLLD $16, t1, t0; \
	VPAND t1, Y15, t1; \
	VMOVDQU xoff(xp), t3; \
	VPSLLD $16, t3, t2; \
	VPAND t3, Y15, t3; \
	VFMADD231PS t3, t1, acc; \
	VFMADD231PS t2, t0, acc

// BF16W adds one row's 32 pairs at (wp) against the activation halves in
// Y8..Y11 into acclo (lanes 0-7) and acchi (8-15); Y12..Y14 are clobbered.
#define BF16W(wp, acclo, acchi) \
	VMOVDQU (wp), Y13; \
	VPSLLD $16, Y13, Y12; \
	VPAND Y13, Y15, Y13; \
	VFMADD231PS Y9, Y13, acclo; \
	VFMADD231PS Y8, Y12, acclo; \
	VMOVDQU 32(wp), Y13; \
	VPSLLD $16, Y13, Y12; \
	VPAND Y13, Y15, Y13; \
	VFMADD231PS Y11, Y13, acchi; \
	VFMADD231PS Y10, Y12, acchi

// func bf16DotVecAVX(w []uint16, x []uint16) float32
// ggml_vec_dot_bf16: two 16-lane VDPBF16PS accumulators over each 64
// elements (Y0,Y1 the first 32, Y2,Y3 the second), reduced and added in
// float64, then the leftovers one by one in float64.
TEXT ·bf16DotVecAVX(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), SI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	SHLQ $1, CX                // bytes
	MOVQ CX, DX
	ANDQ $-128, DX             // bytes of whole 64-element steps
	VPBROADCASTD bf16hi<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

bv64:
	CMPQ AX, DX
	JAE  bvsum
	LEAQ (SI)(AX*1), R8
	LEAQ (DI)(AX*1), R9
	BF16PAIRS(0, R8, 0, R9, Y0, Y8, Y9, Y10, Y11)
	BF16PAIRS(32, R8, 32, R9, Y1, Y8, Y9, Y10, Y11)
	BF16PAIRS(64, R8, 64, R9, Y2, Y8, Y9, Y10, Y11)
	BF16PAIRS(96, R8, 96, R9, Y3, Y8, Y9, Y10, Y11)
	ADDQ $128, AX
	JMP  bv64

bvsum:
	REDUCE16(Y0, Y1, X0, X1)
	REDUCE16(Y2, Y3, X2, X3)
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X2, X2, X2
	VADDSD X2, X0, X0

bvtail:
	CMPQ AX, CX
	JAE  bvdone
	MOVWLZX (SI)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X1
	MOVWLZX (DI)(AX*1), R9
	SHLL $16, R9
	VMOVD R9, X2
	VMULSS X2, X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD X1, X0, X0
	ADDQ $2, AX
	JMP  bvtail

bvdone:
	VCVTSD2SS X0, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func bf16Gemm4x1AVX(w []uint16, ws int, x []uint16, n int, out []float32)
// tinyBLAS's order: out[r] = one 16-lane VDPBF16PS accumulator over
// w[r*ws:r*ws+n] and x[:n], reduced, for r < 4; n must be a multiple of 32.
// Row r's lanes are in Y(2r) (0-7) and Y(2r+1) (8-15).
TEXT ·bf16Gemm4x1AVX(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ n+56(FP), CX
	MOVQ out_base+64(FP), DX
	SHLQ $1, R8
	SHLQ $1, CX
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	VPBROADCASTD bf16hi<>(SB), Y15
	CLEARY0Y7
	XORQ AX, AX

bg41:
	CMPQ AX, CX
	JAE  bg41sum
	LEAQ (DI)(AX*1), R9
	// Activation halves once per step: Y8/Y9 even/odd of the first 16
	// elements, Y10/Y11 of the second.
	VMOVDQU (R9), Y9
	VPSLLD $16, Y9, Y8
	VPAND Y9, Y15, Y9
	VMOVDQU 32(R9), Y11
	VPSLLD $16, Y11, Y10
	VPAND Y11, Y15, Y11
	LEAQ (SI)(AX*1), R10
	BF16W(R10, Y0, Y1)
	LEAQ (R11)(AX*1), R10
	BF16W(R10, Y2, Y3)
	LEAQ (R12)(AX*1), R10
	BF16W(R10, Y4, Y5)
	LEAQ (R13)(AX*1), R10
	BF16W(R10, Y6, Y7)
	ADDQ $64, AX
	JMP  bg41

bg41sum:
	REDUCE16(Y0, Y1, X0, X1)
	VMOVSS X0, (DX)
	REDUCE16(Y2, Y3, X2, X3)
	VMOVSS X2, 4(DX)
	REDUCE16(Y4, Y5, X4, X5)
	VMOVSS X4, 8(DX)
	REDUCE16(Y6, Y7, X6, X7)
	VMOVSS X6, 12(DX)
	VZEROUPPER
	RET

// func bf16DotVec4AVX(w []uint16, ws int, x []uint16, n int, out []float32)
// bf16DotVecAVX for the four rows w[r*ws:r*ws+n], r < 4, into out[r]: the
// 64-element steps one row after the other, each row's float64 sum kept in
// X4..X7 (rotated, so X7 ends with row 0), then the four float64 leftover
// chains side by side, which hides the latency of their dependent adds.
TEXT ·bf16DotVec4AVX(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R12
	MOVQ x_base+32(FP), DI
	MOVQ n+56(FP), CX
	MOVQ out_base+64(FP), DX
	SHLQ $1, R12               // row stride in bytes
	SHLQ $1, CX                // bytes
	MOVQ CX, BX
	ANDQ $-128, BX             // bytes of whole 64-element steps
	VPBROADCASTD bf16hi<>(SB), Y15
	XORQ R10, R10              // row
	MOVQ SI, R11               // row pointer

bv4row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

bv4main:
	CMPQ AX, BX
	JAE  bv4red
	LEAQ (R11)(AX*1), R8
	LEAQ (DI)(AX*1), R9
	BF16PAIRS(0, R8, 0, R9, Y0, Y8, Y9, Y10, Y11)
	BF16PAIRS(32, R8, 32, R9, Y1, Y8, Y9, Y10, Y11)
	BF16PAIRS(64, R8, 64, R9, Y2, Y8, Y9, Y10, Y11)
	BF16PAIRS(96, R8, 96, R9, Y3, Y8, Y9, Y10, Y11)
	ADDQ $128, AX
	JMP  bv4main

bv4red:
	REDUCE16(Y0, Y1, X0, X1)
	REDUCE16(Y2, Y3, X2, X3)
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X2, X2, X2
	VADDSD X2, X0, X0
	VMOVAPD X6, X7
	VMOVAPD X5, X6
	VMOVAPD X4, X5
	VMOVAPD X0, X4
	ADDQ R12, R11
	INCQ R10
	CMPQ R10, $4
	JB   bv4row

	LEAQ (SI)(R12*1), R11
	LEAQ (SI)(R12*2), R13
	LEAQ (R11)(R12*2), R14
	MOVQ BX, AX

bv4tail:
	CMPQ AX, CX
	JAE  bv4done
	MOVWLZX (DI)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X8
	MOVWLZX (SI)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X0
	MOVWLZX (R11)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X1
	MOVWLZX (R13)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X2
	MOVWLZX (R14)(AX*1), R8
	SHLL $16, R8
	VMOVD R8, X3
	VMULSS X8, X0, X0
	VMULSS X8, X1, X1
	VMULSS X8, X2, X2
	VMULSS X8, X3, X3
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X1, X1, X1
	VCVTSS2SD X2, X2, X2
	VCVTSS2SD X3, X3, X3
	VADDSD X0, X7, X7
	VADDSD X1, X6, X6
	VADDSD X2, X5, X5
	VADDSD X3, X4, X4
	ADDQ $2, AX
	JMP  bv4tail

bv4done:
	VCVTSD2SS X7, X7, X7
	VMOVSS X7, (DX)
	VCVTSD2SS X6, X6, X6
	VMOVSS X6, 4(DX)
	VCVTSD2SS X5, X5, X5
	VMOVSS X5, 8(DX)
	VCVTSD2SS X4, X4, X4
	VMOVSS X4, 12(DX)
	VZEROUPPER
	RET
