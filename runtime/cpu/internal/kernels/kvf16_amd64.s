//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// ggml_v_expf's constants (ggml-cpu.c, AVX-512 version), one float32 each.
DATA kvexp<>+0(SB)/4, $0x4b400000  // r = 0x1.8p23
DATA kvexp<>+4(SB)/4, $0x3fb8aa3b  // 0x1.715476p+0 (log2 e)
DATA kvexp<>+8(SB)/4, $0x3f317200  // 0x1.62e4p-1 (ln 2, high part)
DATA kvexp<>+12(SB)/4, $0x35bfbe8e // 0x1.7f7d1cp-20 (ln 2, low part)
DATA kvexp<>+16(SB)/4, $0x3c072010 // 0x1.0e4020p-7
DATA kvexp<>+20(SB)/4, $0x3d2b9f17 // 0x1.573e2ep-5
DATA kvexp<>+24(SB)/4, $0x3e2aaf33 // 0x1.555e66p-3
DATA kvexp<>+28(SB)/4, $0x3efffedb // 0x1.fffdb6p-2
DATA kvexp<>+32(SB)/4, $0x3f7ffff6 // 0x1.ffffecp-1
DATA kvexp<>+36(SB)/4, $0x3f800000 // 1.0
DATA kvexp<>+40(SB)/4, $0xc2fc0000 // -126.0
GLOBL kvexp<>(SB), RODATA|NOPTR, $44

// EXP8 replaces the eight lanes of Y0 (x - max, all ≤ 0) with
// ggml_v_expf of them, fused multiply-adds where ggml has them; lanes
// whose power of two n is below -126 become 0 (see expGGML). Y1-Y6 are
// clobbered; Y8-Y13 hold the constants loaded by expSumGGMLAVX.
#define EXP8 \
	VMOVAPS Y13, Y1; \
	VFMADD231PS Y12, Y0, Y1;  /* z = x*log2e + r */ \
	VSUBPS Y13, Y1, Y1;       /* n = z - r */ \
	VFNMADD231PS Y11, Y1, Y0; /* b = x - n*c1 */ \
	VFNMADD231PS Y10, Y1, Y0; /* b -= n*c2 */ \
	VMULPS Y0, Y0, Y2;        /* u = b*b */ \
	VBROADCASTSS kvexp<>+20(SB), Y3; \
	VBROADCASTSS kvexp<>+16(SB), Y4; \
	VFMADD231PS Y4, Y0, Y3;   /* A = b*p0 + p1 */ \
	VBROADCASTSS kvexp<>+28(SB), Y5; \
	VBROADCASTSS kvexp<>+24(SB), Y4; \
	VFMADD231PS Y4, Y0, Y5;   /* B = b*p2 + p3 */ \
	VMOVAPS Y9, Y6; \
	VBROADCASTSS kvexp<>+32(SB), Y4; \
	VFMADD231PS Y4, Y0, Y6;   /* C = b*p4 + 1 */ \
	VFMADD213PS Y5, Y2, Y3;   /* A = u*A + B */ \
	VFMADD213PS Y6, Y2, Y3;   /* j = u*A + C */ \
	VCMPPS $1, Y8, Y1, Y4;    /* n < -126 */ \
	VCVTPS2DQ Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VPADDD Y9, Y1, Y1;        /* 2^n: n added to 1.0's exponent */ \
	VMULPS Y1, Y3, Y3;        /* j*2^n, rounded once like VSCALEFPS */ \
	VANDNPS Y3, Y4, Y0

// func expSumGGMLAVX(x []float32, m float32) float64
// Replaces x[i] with exp(x[i]-m) as ggml_v_expf computes it and returns
// ggml_vec_soft_max_f32's sum: each 16 lanes reduced as
// _mm512_reduce_add_ps does, those sums added in float64. len(x) must be a
// multiple of 16 and every x[i] ≤ m (or -Inf).
TEXT ·expSumGGMLAVX(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y14
	VBROADCASTSS kvexp<>+0(SB), Y13
	VBROADCASTSS kvexp<>+4(SB), Y12
	VBROADCASTSS kvexp<>+8(SB), Y11
	VBROADCASTSS kvexp<>+12(SB), Y10
	VBROADCASTSS kvexp<>+36(SB), Y9
	VBROADCASTSS kvexp<>+40(SB), Y8
	VXORPD X15, X15, X15
	SHRQ $4, CX

kvexploop:
	TESTQ CX, CX
	JZ    kvexpdone
	VMOVUPS (SI), Y0
	VSUBPS Y14, Y0, Y0
	EXP8
	VMOVUPS Y0, (SI)
	VMOVAPS Y0, Y7
	VMOVUPS 32(SI), Y0
	VSUBPS Y14, Y0, Y0
	EXP8
	VMOVUPS Y0, 32(SI)
	// _mm512_reduce_add_ps of the 16 lanes (Y7 lanes 0-7, Y0 lanes 8-15).
	REDUCE16(Y7, Y0, X7, X0)
	VCVTSS2SD X7, X7, X7
	VADDSD X7, X15, X15
	ADDQ $64, SI
	DECQ CX
	JMP  kvexploop

kvexpdone:
	VMOVSD X15, ret+32(FP)
	VZEROUPPER
	RET

// func f32ToF16AVX(dst []uint16, src []float32)
// dst[i] = src[i] in half precision, rounded to nearest even (VCVTPS2PH
// with immediate 0, as ggml's F16C conversions), for len(src)&^7 elements.
TEXT ·f32ToF16AVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX

kvcvtloop:
	TESTQ CX, CX
	JZ    kvcvtdone
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JMP  kvcvtloop

kvcvtdone:
	VZEROUPPER
	RET
