// Included by the Q4_K and Q5_K tile kernels.

// KSCALESMINS unpacks the twelve 6-bit scale and min bytes of the Q4_K or
// Q5_K super-block at SI (bytes 4..15, words u0, u1, u2: llama.cpp's
// get_scale_min_k4) into the 16 words of Y2, scales 0..7 then mins 0..7,
// as q4kDotAVX does: scales 0..3 are u0&0x3f, scales 4..7 u2&0x0f with
// u0's top two bits above them; mins 0..3 are u1&0x3f, mins 4..7 u2>>4
// with u1's top two bits. Clobbers AX, R12, R13 and R14.
#define KSCALESMINS \
	MOVL 12(SI), R12; \
	MOVL 4(SI), AX; \
	MOVL AX, R13; \
	SHRL $6, R13; \
	ANDL $0x03030303, R13; \
	SHLL $4, R13; \
	MOVL R12, R14; \
	ANDL $0x0f0f0f0f, R14; \
	ORL  R13, R14; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R14; \
	ORQ  R14, AX; \
	VMOVQ AX, X2; \
	MOVL 8(SI), AX; \
	MOVL AX, R13; \
	SHRL $6, R13; \
	ANDL $0x03030303, R13; \
	SHLL $4, R13; \
	SHRL $4, R12; \
	ANDL $0x0f0f0f0f, R12; \
	ORL  R13, R12; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R12; \
	ORQ  R12, AX; \
	VPINSRQ $1, AX, X2, X2; \
	VPMOVZXBW X2, Y2
