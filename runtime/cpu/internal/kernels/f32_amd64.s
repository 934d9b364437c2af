//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// func dotF32AVX(a, b []float32) float32
// Requires len(a) to be a multiple of 8 and len(b) >= len(a).
TEXT ·dotF32AVX(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	SHLQ $2, CX
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $-128, DX

dot32:
	CMPQ AX, DX
	JAE  dot8
	VMOVUPS (SI)(AX*1), Y4
	VMOVUPS 32(SI)(AX*1), Y5
	VMOVUPS 64(SI)(AX*1), Y6
	VMOVUPS 96(SI)(AX*1), Y7
	VFMADD231PS (DI)(AX*1), Y4, Y0
	VFMADD231PS 32(DI)(AX*1), Y5, Y1
	VFMADD231PS 64(DI)(AX*1), Y6, Y2
	VFMADD231PS 96(DI)(AX*1), Y7, Y3
	ADDQ $128, AX
	JMP  dot32

dot8:
	CMPQ AX, CX
	JAE  dotsum
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DI)(AX*1), Y4, Y0
	ADDQ $32, AX
	JMP  dot8

dotsum:
	HADDSUM32(Y0, Y1, Y2, Y3, X0, X1)
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func axpyF32AVX(alpha float32, x, y []float32)
// y[i] += alpha*x[i] for i < len(x); len(x) must be a multiple of 8.
TEXT ·axpyF32AVX(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ x_base+8(FP), SI
	MOVQ x_len+16(FP), CX
	MOVQ y_base+32(FP), DI
	SHLQ $2, CX
	XORQ AX, AX

axpy8:
	CMPQ AX, CX
	JAE  axpydone
	VMOVUPS (DI)(AX*1), Y1
	VFMADD231PS (SI)(AX*1), Y0, Y1
	VMOVUPS Y1, (DI)(AX*1)
	ADDQ $32, AX
	JMP  axpy8

axpydone:
	VZEROUPPER
	RET

// func f32Tile4x1(w []float32, ws int, x []float32, n int, out []float32)
// out[r] = sum_{c<n} w[r*ws+c]*x[c] for r < 4; n must be a multiple of 8.
TEXT ·f32Tile4x1(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ n+56(FP), CX
	MOVQ out_base+64(FP), DX
	SHLQ $2, R8
	SHLQ $2, CX
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	CLEARY0Y7
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-64, BX

t41x16:
	CMPQ AX, BX
	JAE  t41x8
	VMOVUPS (DI)(AX*1), Y8
	VMOVUPS 32(DI)(AX*1), Y9
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (R11)(AX*1), Y8, Y1
	VFMADD231PS (R12)(AX*1), Y8, Y2
	VFMADD231PS (R13)(AX*1), Y8, Y3
	VFMADD231PS 32(SI)(AX*1), Y9, Y4
	VFMADD231PS 32(R11)(AX*1), Y9, Y5
	VFMADD231PS 32(R12)(AX*1), Y9, Y6
	VFMADD231PS 32(R13)(AX*1), Y9, Y7
	ADDQ $64, AX
	JMP  t41x16

t41x8:
	CMPQ AX, CX
	JAE  t41sum
	VMOVUPS (DI)(AX*1), Y8
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (R11)(AX*1), Y8, Y1
	VFMADD231PS (R12)(AX*1), Y8, Y2
	VFMADD231PS (R13)(AX*1), Y8, Y3
	ADDQ $32, AX
	JMP  t41x8

t41sum:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	HSUMROWS4(Y0, Y1, Y2, Y3, X0, X1)
	VMOVUPS X0, (DX)
	VZEROUPPER
	RET

// func f32Tile4x3(w []float32, ws int, x []float32, xs int, n int, out []float32, os int)
// out[b*os+r] = sum_{c<n} w[r*ws+c]*x[b*xs+c] for r < 4, b < 3; n must be a
// multiple of 8. Each weight vector loaded serves three activation rows.
TEXT ·f32Tile4x3(SB), NOSPLIT, $0-104
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ xs+56(FP), R9
	MOVQ n+64(FP), CX
	MOVQ out_base+72(FP), DX
	MOVQ os+96(FP), R10
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $2, CX
	LEAQ (SI)(R8*1), R11
	LEAQ (SI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	LEAQ (DI)(R9*1), AX
	LEAQ (DI)(R9*2), BX
	CLEARY0Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ R8, R8

t43loop:
	CMPQ R8, CX
	JAE  t43sum
	VMOVUPS (DI)(R8*1), Y12
	VMOVUPS (AX)(R8*1), Y13
	VMOVUPS (BX)(R8*1), Y14
	VMOVUPS (SI)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VMOVUPS (R11)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VMOVUPS (R12)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VMOVUPS (R13)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ $32, R8
	JMP  t43loop

t43sum:
	// Accumulator 3r+b holds row r, batch b; fold each batch's four rows
	// into one vector of four sums.
	HSUMROWS4(Y0, Y3, Y6, Y9, X0, X12)
	VMOVUPS X0, (DX)
	HSUMROWS4(Y1, Y4, Y7, Y10, X1, X12)
	VMOVUPS X1, (DX)(R10*1)
	HSUMROWS4(Y2, Y5, Y8, Y11, X2, X12)
	VMOVUPS X2, (DX)(R10*2)
	VZEROUPPER
	RET

// func f32Tile1x8(w []float32, x []float32, xs int, n int, out []float32, os int)
// out[b*os] = sum_{c<n} w[c]*x[b*xs+c] for b < 8; n must be a multiple of
// 8. One weight row meets eight activation rows: the weights stream once,
// sequentially, which suits batched decode of matrices larger than the
// caches.
TEXT ·f32Tile1x8(SB), NOSPLIT, $0-96
	MOVQ w_base+0(FP), SI
	MOVQ x_base+24(FP), DI
	MOVQ xs+48(FP), R9
	MOVQ n+56(FP), CX
	SHLQ $2, R9
	SHLQ $2, CX
	LEAQ (DI)(R9*1), R8
	LEAQ (DI)(R9*2), R10
	LEAQ (R8)(R9*2), R11
	LEAQ (R10)(R9*2), R12
	LEAQ (R11)(R9*2), R13
	LEAQ (R12)(R9*2), BX
	LEAQ (R13)(R9*2), DX
	CLEARY0Y7
	XORQ AX, AX

t18loop:
	CMPQ AX, CX
	JAE  t18sum
	VMOVUPS (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS (R8)(AX*1), Y8, Y1
	VFMADD231PS (R10)(AX*1), Y8, Y2
	VFMADD231PS (R11)(AX*1), Y8, Y3
	VFMADD231PS (R12)(AX*1), Y8, Y4
	VFMADD231PS (R13)(AX*1), Y8, Y5
	VFMADD231PS (BX)(AX*1), Y8, Y6
	VFMADD231PS (DX)(AX*1), Y8, Y7
	ADDQ $32, AX
	JMP  t18loop

t18sum:
	HADDROWS4(Y0, Y1, Y2, Y3)  // [s0 s1 s2 s3 | upper halves]
	HADDROWS4(Y4, Y5, Y6, Y7)  // [s4 s5 s6 s7 | upper halves]
	VPERM2F128 $0x20, Y4, Y0, Y9
	VPERM2F128 $0x31, Y4, Y0, Y10
	VADDPS Y10, Y9, Y9         // s0..s7
	MOVQ out_base+64(FP), DI
	MOVQ os+88(FP), R9
	SHLQ $2, R9
	VEXTRACTF128 $1, Y9, X10
	VMOVSS X9, (DI)
	VEXTRACTPS $1, X9, (DI)(R9*1)
	LEAQ (DI)(R9*2), DI
	VEXTRACTPS $2, X9, (DI)
	VEXTRACTPS $3, X9, (DI)(R9*1)
	LEAQ (DI)(R9*2), DI
	VMOVSS X10, (DI)
	VEXTRACTPS $1, X10, (DI)(R9*1)
	LEAQ (DI)(R9*2), DI
	VEXTRACTPS $2, X10, (DI)
	VEXTRACTPS $3, X10, (DI)(R9*1)
	VZEROUPPER
	RET

// func axpyRowsAVX(y []float32, a []float32, m []float32, stride int)
// y[c] += sum_j a[j]*m[j*stride+c] for j < len(a), c < len(y); len(y) must
// be a multiple of 8 (attention's weighted sum of value rows). Each run of
// 32 (then 8) columns of y stays in registers across all rows: the same
// fused multiply-adds in the same order as one axpyF32AVX per row, without
// a load and store of y per row.
TEXT ·axpyRowsAVX(SB), NOSPLIT, $0-80
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ a_base+24(FP), DX
	MOVQ a_len+32(FP), BX
	MOVQ m_base+48(FP), SI
	MOVQ stride+72(FP), R9
	SHLQ $2, CX
	SHLQ $2, R9
	XORQ AX, AX

acols32:
	MOVQ CX, R10
	SUBQ AX, R10
	CMPQ R10, $128
	JB   acols8
	VMOVUPS (DI)(AX*1), Y1
	VMOVUPS 32(DI)(AX*1), Y2
	VMOVUPS 64(DI)(AX*1), Y3
	VMOVUPS 96(DI)(AX*1), Y4
	MOVQ DX, R11
	MOVQ BX, R12
	LEAQ (SI)(AX*1), R13

arows32:
	TESTQ R12, R12
	JZ    astore32
	VBROADCASTSS (R11), Y0
	VFMADD231PS (R13), Y0, Y1
	VFMADD231PS 32(R13), Y0, Y2
	VFMADD231PS 64(R13), Y0, Y3
	VFMADD231PS 96(R13), Y0, Y4
	ADDQ $4, R11
	ADDQ R9, R13
	DECQ R12
	JMP  arows32

astore32:
	VMOVUPS Y1, (DI)(AX*1)
	VMOVUPS Y2, 32(DI)(AX*1)
	VMOVUPS Y3, 64(DI)(AX*1)
	VMOVUPS Y4, 96(DI)(AX*1)
	ADDQ $128, AX
	JMP  acols32

acols8:
	CMPQ AX, CX
	JAE  arowsdone
	VMOVUPS (DI)(AX*1), Y1
	MOVQ DX, R11
	MOVQ BX, R12
	LEAQ (SI)(AX*1), R13

arows8:
	TESTQ R12, R12
	JZ    astore8
	VBROADCASTSS (R11), Y0
	VFMADD231PS (R13), Y0, Y1
	ADDQ $4, R11
	ADDQ R9, R13
	DECQ R12
	JMP  arows8

astore8:
	VMOVUPS Y1, (DI)(AX*1)
	ADDQ $32, AX
	JMP  acols8

arowsdone:
	VZEROUPPER
	RET

// func f32VecRows(w []float32, ws int, x []float32, n int, out []float32)
// out[r] = the dot product of w[r*ws:r*ws+n] and x[:n] for r < len(out) in
// the order of ggml_vec_dot_f32 on AVX-512 (GGML_F32_STEP 64): lane l of 64
// sums elements l, l+64, ... with fused multiply-adds (Y0..Y7 hold lanes
// 0-7, ..., 56-63, ggml's four zmm accumulators); GGML_F32x16_REDUCE adds
// lanes l+32 onto l, then l+16 onto l, and _mm512_reduce_add_ps the rest.
// n must be a multiple of 64 (ggml's leftover loop is not reproduced).
// dotF32Rows keeps the order of ggml's AVX2 build (32 lanes).
TEXT ·f32VecRows(SB), NOSPLIT, $0-88
	MOVQ w_base+0(FP), SI
	MOVQ ws+24(FP), R8
	MOVQ x_base+32(FP), DI
	MOVQ n+56(FP), CX
	MOVQ out_base+64(FP), DX
	MOVQ out_len+72(FP), BX
	SHLQ $2, R8
	SHLQ $2, CX

frrow:
	TESTQ BX, BX
	JZ    frdone
	CLEARY0Y7
	XORQ   AX, AX

frloop:
	CMPQ AX, CX
	JAE  frsum
	VMOVUPS (SI)(AX*1), Y8
	VMOVUPS 32(SI)(AX*1), Y9
	VMOVUPS 64(SI)(AX*1), Y10
	VMOVUPS 96(SI)(AX*1), Y11
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS 32(DI)(AX*1), Y9, Y1
	VFMADD231PS 64(DI)(AX*1), Y10, Y2
	VFMADD231PS 96(DI)(AX*1), Y11, Y3
	VMOVUPS 128(SI)(AX*1), Y8
	VMOVUPS 160(SI)(AX*1), Y9
	VMOVUPS 192(SI)(AX*1), Y10
	VMOVUPS 224(SI)(AX*1), Y11
	VFMADD231PS 128(DI)(AX*1), Y8, Y4
	VFMADD231PS 160(DI)(AX*1), Y9, Y5
	VFMADD231PS 192(DI)(AX*1), Y10, Y6
	VFMADD231PS 224(DI)(AX*1), Y11, Y7
	ADDQ $256, AX
	JMP  frloop

frsum:
	REDUCE64
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	ADDQ   R8, SI
	DECQ   BX
	JMP    frrow

frdone:
	VZEROUPPER
	RET
