//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Vector exp: the steps of expf in exp.go, eight lanes at a time. EXP8
// replaces register X (a Y register) using Y8..Y11 as scratch and the
// constants expc<> (see below) from memory.

DATA expc<>+0(SB)/4, $88.0           // max
DATA expc<>+4(SB)/4, $-87.0          // min
DATA expc<>+8(SB)/4, $1.44269504088896341 // log2e
DATA expc<>+12(SB)/4, $0.5
DATA expc<>+16(SB)/4, $0.693359375   // ln2 hi
DATA expc<>+20(SB)/4, $-2.12194440e-4 // ln2 lo
DATA expc<>+24(SB)/4, $1.9875691500e-4
DATA expc<>+28(SB)/4, $1.3981999507e-3
DATA expc<>+32(SB)/4, $8.3334519073e-3
DATA expc<>+36(SB)/4, $4.1665795894e-2
DATA expc<>+40(SB)/4, $1.6666665459e-1
DATA expc<>+44(SB)/4, $5.0000001201e-1
DATA expc<>+48(SB)/4, $1.0
DATA expc<>+52(SB)/4, $127
DATA expc<>+56(SB)/4, $0x80000000    // sign bit
GLOBL expc<>(SB), RODATA|NOPTR, $60

#define EXP8(X) \
	VBROADCASTSS expc<>+0(SB), Y8; \
	VMINPS Y8, X, X; \
	VBROADCASTSS expc<>+4(SB), Y8; \
	VMAXPS Y8, X, X; \
	VBROADCASTSS expc<>+8(SB), Y9; \
	VBROADCASTSS expc<>+12(SB), Y8; \
	VFMADD231PS Y9, X, Y8; \
	VROUNDPS $1, Y8, Y8; \
	VBROADCASTSS expc<>+16(SB), Y9; \
	VFNMADD231PS Y9, Y8, X; \
	VBROADCASTSS expc<>+20(SB), Y9; \
	VFNMADD231PS Y9, Y8, X; \
	VBROADCASTSS expc<>+24(SB), Y10; \
	VBROADCASTSS expc<>+28(SB), Y9; \
	VFMADD213PS Y9, X, Y10; \
	VBROADCASTSS expc<>+32(SB), Y9; \
	VFMADD213PS Y9, X, Y10; \
	VBROADCASTSS expc<>+36(SB), Y9; \
	VFMADD213PS Y9, X, Y10; \
	VBROADCASTSS expc<>+40(SB), Y9; \
	VFMADD213PS Y9, X, Y10; \
	VBROADCASTSS expc<>+44(SB), Y9; \
	VFMADD213PS Y9, X, Y10; \
	VMULPS X, X, Y11; \
	VBROADCASTSS expc<>+48(SB), Y9; \
	VADDPS Y9, X, X; \
	VFMADD231PS Y11, Y10, X; \
	VCVTPS2DQ Y8, Y8; \
	VPBROADCASTD expc<>+52(SB), Y9; \
	VPADDD Y9, Y8, Y8; \
	VPSLLD $23, Y8, Y8; \
	VMULPS Y8, X, X

// func expSubAVX(x []float32, m float32) float32
// x[i] = exp(x[i]-m) for len(x) a multiple of 8; returns the sum.
TEXT ·expSubAVX(SB), NOSPLIT, $0-36
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y12
	VXORPS Y13, Y13, Y13
	SHLQ $2, CX
	XORQ AX, AX

es8:
	CMPQ AX, CX
	JAE  esdone
	VMOVUPS (SI)(AX*1), Y0
	VSUBPS Y12, Y0, Y0
	EXP8(Y0)
	VMOVUPS Y0, (SI)(AX*1)
	VADDPS Y0, Y13, Y13
	ADDQ $32, AX
	JMP  es8

esdone:
	HALVES8TO(Y13, X13, X1, X0)
	HADD4(X0)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func swigluAVX(gate, up []float32)
// gate[i] = gate[i]/(1+exp(-gate[i])) * up[i] for len(gate) a multiple of 8.
TEXT ·swigluAVX(SB), NOSPLIT, $0-48
	MOVQ gate_base+0(FP), SI
	MOVQ gate_len+8(FP), CX
	MOVQ up_base+24(FP), DI
	VBROADCASTSS expc<>+56(SB), Y12
	VBROADCASTSS expc<>+48(SB), Y13
	SHLQ $2, CX
	XORQ AX, AX

sg8:
	CMPQ AX, CX
	JAE  sgdone
	VMOVUPS (SI)(AX*1), Y1
	VXORPS Y12, Y1, Y0         // -g
	EXP8(Y0)
	VADDPS Y13, Y0, Y0
	VDIVPS Y0, Y1, Y1
	VMULPS (DI)(AX*1), Y1, Y1
	VMOVUPS Y1, (SI)(AX*1)
	ADDQ $32, AX
	JMP  sg8

sgdone:
	VZEROUPPER
	RET

// func siluAVX(x []float32)
// x[i] = x[i]/(1+exp(-x[i])) for len(x) a multiple of 8.
TEXT ·siluAVX(SB), NOSPLIT, $0-24
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS expc<>+56(SB), Y12
	VBROADCASTSS expc<>+48(SB), Y13
	SHLQ $2, CX
	XORQ AX, AX

si8:
	CMPQ AX, CX
	JAE  sidone
	VMOVUPS (SI)(AX*1), Y1
	VXORPS Y12, Y1, Y0
	EXP8(Y0)
	VADDPS Y13, Y0, Y0
	VDIVPS Y0, Y1, Y1
	VMOVUPS Y1, (SI)(AX*1)
	ADDQ $32, AX
	JMP  si8

sidone:
	VZEROUPPER
	RET
