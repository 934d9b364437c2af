//go:build amd64 && !purego

#include "textflag.h"

// ROPE4 rotates four pairs, x0 in X2 and x1 in X3 (float32), by the
// cosines at (SI)(AX*1) and sines at (DX)(AX*1), as RopePair does: the
// x1 products rounded to float32, then x0*c - x1*s and x0*s + x1*c as
// float64 fused multiply-adds, each rounded once to float32, into X6 (y0)
// and X7 (y1). X4, X5 are clobbered.
#define ROPE4 \
	VMOVUPS (SI)(AX*1), X4; \
	VMOVUPS (DX)(AX*1), X5; \
	VMULPS X5, X3, X6; \
	VMULPS X4, X3, X7; \
	VCVTPS2PD X2, Y2; \
	VCVTPS2PD X4, Y4; \
	VCVTPS2PD X5, Y5; \
	VCVTPS2PD X6, Y6; \
	VCVTPS2PD X7, Y7; \
	VFMSUB231PD Y4, Y2, Y6; \
	VFMADD231PD Y5, Y2, Y7; \
	VCVTPD2PSY Y6, X6; \
	VCVTPD2PSY Y7, X7

// func ropePairsAVX(v, cos, sin []float32)
// (v[2j], v[2j+1]) = RopePair(v[2j], v[2j+1], cos[j], sin[j]) for j <
// len(cos), a multiple of 4.
TEXT ·ropePairsAVX(SB), NOSPLIT, $0-72
	MOVQ v_base+0(FP), DI
	MOVQ cos_base+24(FP), SI
	MOVQ cos_len+32(FP), CX
	MOVQ sin_base+48(FP), DX
	SHLQ $2, CX                // bytes of cos; v's offsets are twice these
	XORQ AX, AX

rploop:
	CMPQ AX, CX
	JAE  rpdone
	VMOVUPS (DI)(AX*2), X0     // a0 b0 a1 b1
	VMOVUPS 16(DI)(AX*2), X1   // a2 b2 a3 b3
	VSHUFPS $0x88, X1, X0, X2  // a0 a1 a2 a3
	VSHUFPS $0xDD, X1, X0, X3  // b0 b1 b2 b3
	ROPE4
	VUNPCKLPS X7, X6, X0       // y0_0 y1_0 y0_1 y1_1
	VUNPCKHPS X7, X6, X1       // y0_2 y1_2 y0_3 y1_3
	VMOVUPS X0, (DI)(AX*2)
	VMOVUPS X1, 16(DI)(AX*2)
	ADDQ $16, AX
	JMP  rploop

rpdone:
	VZEROUPPER
	RET

// func ropeHalvesAVX(lo, hi, cos, sin []float32)
// (lo[j], hi[j]) = RopePair(lo[j], hi[j], cos[j], sin[j]) for j <
// len(cos), a multiple of 4 (neox: the pairs are half a head apart).
TEXT ·ropeHalvesAVX(SB), NOSPLIT, $0-96
	MOVQ lo_base+0(FP), DI
	MOVQ hi_base+24(FP), BX
	MOVQ cos_base+48(FP), SI
	MOVQ cos_len+56(FP), CX
	MOVQ sin_base+72(FP), DX
	SHLQ $2, CX
	XORQ AX, AX

rhloop:
	CMPQ AX, CX
	JAE  rhdone
	VMOVUPS (DI)(AX*1), X2
	VMOVUPS (BX)(AX*1), X3
	ROPE4
	VMOVUPS X6, (DI)(AX*1)
	VMOVUPS X7, (BX)(AX*1)
	ADDQ $16, AX
	JMP  rhloop

rhdone:
	VZEROUPPER
	RET
