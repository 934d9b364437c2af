//go:build amd64 && !purego

#include "textflag.h"
#include "q6k_amd64.h"
#include "hsum_amd64.h"

// K-quant dot products against Q8_K activations (256 int8 codes, one float32
// scale and sixteen int16 sums of 16 codes per super-block).

DATA kmask4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask4<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kmask4<>(SB), RODATA|NOPTR, $32

// func q4kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32
// Block layout in quant.go: f16 d, f16 dmin, 12 bytes of packed 6-bit
// scales and mins, 128 bytes of nibbles. The scales and mins are unpacked
// with 32-bit integer operations into 16 words on the stack.
TEXT ·q4kDotAVX(SB), NOSPLIT, $64-100
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	MOVQ xs_base+72(FP), BX
	VXORPS Y0, Y0, Y0          // float sum of d*scale parts
	VXORPS X1, X1, X1          // float sum of dmin*min parts (4 lanes)
	VMOVDQU kmask4<>(SB), Y15

q4kblock:
	TESTQ CX, CX
	JZ    q4kdone
	// unpack scales (bytes 0..7) and mins (bytes 8..15) in general
	// registers and move them to a vector directly: four 4-byte stores
	// read back as one 16-byte load would miss store forwarding and stall
	// every block.
	MOVL 4(SI), R8             // u0
	MOVL 8(SI), R9             // u1
	MOVL 12(SI), R10           // u2
	MOVL R8, AX
	ANDL $0x3f3f3f3f, AX       // scales 0..3
	MOVL R10, R11
	ANDL $0x0f0f0f0f, R11
	MOVL R8, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11              // scales 4..7
	SHLQ $32, R11
	ORQ  R11, AX
	MOVL R9, R8
	ANDL $0x3f3f3f3f, R8       // mins 0..3
	MOVL R10, R11
	SHRL $4, R11
	ANDL $0x0f0f0f0f, R11
	MOVL R9, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11              // mins 4..7
	SHLQ $32, R11
	ORQ  R11, R8
	VMOVQ AX, X2
	VPINSRQ $1, R8, X2, X2
	VPMOVZXBW X2, Y2           // 16 words: scales then mins
	VMOVDQU Y2, 16(SP)
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
	VPMADDWD X13, X6, X6       // mins are words 8..15 of the unpacked scales
	VCVTDQ2PS X6, X6
	VFMADD231PS X6, X5, X1

	// scales: sum_j sc_j * dot(nibbles_j, x_j), in int32
	VPXOR Y8, Y8, Y8
	MOVQ $0, R13

q4kchunk:
	VMOVDQU 16(SI)(R13*1), Y9
	VPSRLW $4, Y9, Y10
	VPAND Y15, Y9, Y9          // low nibbles: sub-block 2k
	VPAND Y15, Y10, Y10        // high nibbles: sub-block 2k+1
	VPMADDUBSW (DI)(R13*2), Y9, Y9
	VPMADDUBSW 32(DI)(R13*2), Y10, Y10
	MOVQ R13, R14
	SHRQ $3, R14               // R13/8 = 4k bytes = word offset of sc_2k
	VPBROADCASTW 16(SP)(R14*1), Y11
	VPBROADCASTW 18(SP)(R14*1), Y12
	VPMADDWD Y11, Y9, Y9
	VPMADDWD Y12, Y10, Y10
	VPADDD Y9, Y8, Y8
	VPADDD Y10, Y8, Y8
	ADDQ $32, R13
	CMPQ R13, $128
	JB   q4kchunk

	VCVTDQ2PS Y8, Y8
	VFMADD231PS Y8, Y4, Y0

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q4kblock

q4kdone:
	HADDSUBSUM8(Y0, X0, X1, X2)
	VMOVSS X0, ret+96(FP)
	VZEROUPPER
	RET

// kmask30 keeps bits 4-5 of each byte: a Q6_K code's two high bits.
DATA kmask30<>+0(SB)/8, $0x3030303030303030
DATA kmask30<>+8(SB)/8, $0x3030303030303030
DATA kmask30<>+16(SB)/8, $0x3030303030303030
DATA kmask30<>+24(SB)/8, $0x3030303030303030
GLOBL kmask30<>(SB), RODATA|NOPTR, $32

// kq6scale repeats, for quarter q of a Q6_K half, scale word 2q in the low
// 128-bit lane and word 2q+1 in the high one (VPSHUFB controls).
DATA kq6scale<>+0(SB)/8, $0x0100010001000100
DATA kq6scale<>+8(SB)/8, $0x0100010001000100
DATA kq6scale<>+16(SB)/8, $0x0302030203020302
DATA kq6scale<>+24(SB)/8, $0x0302030203020302
DATA kq6scale<>+32(SB)/8, $0x0504050405040504
DATA kq6scale<>+40(SB)/8, $0x0504050405040504
DATA kq6scale<>+48(SB)/8, $0x0706070607060706
DATA kq6scale<>+56(SB)/8, $0x0706070607060706
DATA kq6scale<>+64(SB)/8, $0x0908090809080908
DATA kq6scale<>+72(SB)/8, $0x0908090809080908
DATA kq6scale<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq6scale<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq6scale<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq6scale<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq6scale<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq6scale<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL kq6scale<>(SB), RODATA|NOPTR, $128

// func q6kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32
// Block layout in quant.go: ql[128], qh[64], int8 scales[16], f16 d. The
// arithmetic is ggml_vec_dot_q6_K_q8_K's (__AVX2__): unsigned codes q
// times x, minus 32 times x, in each word of product pairs; words times
// the scales into eight int32 lanes (lane i: elements 4i..4i+3 of each
// 32-element run); per super-block the lanes to float, fused-multiply-added
// with d*xd into eight float lanes; hsum_float_8 at the end. xs holds the
// activations' 32*(x[2i]+x[2i+1]) (q6kPairSums, 128 words per super-block):
// the same words ggml's _mm256_maddubs_epi16(m32s, q8) makes for every
// weight row, made once per activation row instead.
TEXT ·q6kDotAVX(SB), NOSPLIT, $0-100
	MOVQ w_base+0(FP), SI
	MOVQ xq_base+24(FP), DI
	MOVQ xd_base+48(FP), DX
	MOVQ xd_len+56(FP), CX
	MOVQ xs_base+72(FP), BX
	VXORPS Y0, Y0, Y0
	VMOVDQU kmask4<>(SB), Y15
	VMOVDQU kmask30<>(SB), Y14

q6kblock:
	TESTQ CX, CX
	JZ    q6kdone
	VPXOR Y8, Y8, Y8           // eight int32 lanes, as ggml's sumi
	Q6KROWHALF(0, 32, 128, 0, 192, kq6scale<>)
	Q6KROWHALF(64, 96, 160, 128, 200, kq6scale<>)

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
	JMP  q6kblock

q6kdone:
	HSUM8(Y0, X0, X2)
	VMOVSS X0, ret+96(FP)
	VZEROUPPER
	RET
