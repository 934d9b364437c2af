// Q6_K row body shared by q6kDotAVX (kquant_amd64.s) and q6kRows
// (q6ktile_amd64.s): one half (128 codes) of the super-block at SI against
// the activation codes at DI and their pair sums (q6kPairSums) at BX,
// added to the eight int32 lanes Y8. Y15 holds 0x0f and Y14 0x30 in every
// byte; CTRL is the file's VPSHUFB scale controls. Clobbers Y2-Y6,
// Y9-Y13.
//
// The arithmetic is ggml_vec_dot_q6_K_q8_K's (__AVX2__): unsigned codes q
// times x minus 32*(x+x') in each word of product pairs, the words times
// the scales into the lanes (lane i: elements 4i..4i+3 of each 32-element
// run).
//
// The high bits go straight to bits 4-5 of each byte, (qh>>s&3)<<4 =
// (qh<<(4-s))&0x30: word shifts, the bits that cross into the next byte
// landing outside 0x30. The scale words: the half's 8 scales as words in
// both 128-bit lanes, then one VPSHUFB per quarter repeats word 2*quarter
// (low lane) and 2*quarter+1 (high lane).

// Q6KUNPACK unpacks half h's 128 codes (ql at QL, qh at QH) into Y9, Y11,
// Y12, Y13 as both row kernels do (Y14: 0x30 in every byte).
#define Q6KUNPACK(QL, QL32, QH) \
	VMOVDQU QL(SI), Y4; \
	VMOVDQU QL32(SI), Y5; \
	VMOVDQU QH(SI), Y6; \
	VPAND Y15, Y4, Y9; \
	VPSLLW $4, Y6, Y10; \
	VPAND Y14, Y10, Y10; \
	VPOR Y10, Y9, Y9; \
	VPAND Y15, Y5, Y11; \
	VPSLLW $2, Y6, Y10; \
	VPAND Y14, Y10, Y10; \
	VPOR Y10, Y11, Y11; \
	VPSRLW $4, Y4, Y12; \
	VPAND Y15, Y12, Y12; \
	VPAND Y14, Y6, Y10; \
	VPOR Y10, Y12, Y12; \
	VPSRLW $4, Y5, Y13; \
	VPAND Y15, Y13, Y13; \
	VPSRLW $2, Y6, Y10; \
	VPAND Y14, Y10, Y10; \
	VPOR Y10, Y13, Y13

// Q6KROWHALF is that body for one half. QL, QL32, QH: byte offsets of the
// half's ql[l], ql[l+32] and qh[l]; XO: its activation (and pair-sum) byte
// offset; SC: its scales' offset.
#define Q6KROWHALF(QL, QL32, QH, XO, SC, CTRL) \
	Q6KUNPACK(QL, QL32, QH); \
	VPMADDUBSW XO(DI), Y9, Y9; \
	VPSUBW XO(BX), Y9, Y9; \
	VPMADDUBSW XO+32(DI), Y11, Y11; \
	VPSUBW XO+32(BX), Y11, Y11; \
	VPMADDUBSW XO+64(DI), Y12, Y12; \
	VPSUBW XO+64(BX), Y12, Y12; \
	VPMADDUBSW XO+96(DI), Y13, Y13; \
	VPSUBW XO+96(BX), Y13, Y13; \
	VPMOVSXBW SC(SI), X2; \
	VINSERTI128 $1, X2, Y2, Y2; \
	VPSHUFB CTRL+0(SB), Y2, Y3; \
	VPMADDWD Y3, Y9, Y9; \
	VPSHUFB CTRL+32(SB), Y2, Y3; \
	VPMADDWD Y3, Y11, Y11; \
	VPSHUFB CTRL+64(SB), Y2, Y3; \
	VPMADDWD Y3, Y12, Y12; \
	VPSHUFB CTRL+96(SB), Y2, Y3; \
	VPMADDWD Y3, Y13, Y13; \
	VPADDD Y9, Y8, Y8; \
	VPADDD Y11, Y8, Y8; \
	VPADDD Y12, Y8, Y8; \
	VPADDD Y13, Y8, Y8
