// Package kernels holds the compute kernels of the cpu runtime: matrix
// multiplication against weights stored in GGUF tensor types (F32, F16, BF16,
// Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), the quantizers that produce those
// types, the vector operations a transformer forward pass needs, and the
// worker pool the matrix products run on.
//
// Quantized products follow llama.cpp's scheme: the activations are quantized
// once per call (Q8_0 blocks for Q8_0/Q4_0/Q5_0 weights, Q8_1 blocks for
// Q5_1, Q8_K blocks for K-quant weights) and every weight block meets its
// activation block in an integer dot product, so a weight matrix is streamed
// once per call and never dequantized as a whole. On amd64 with AVX2 and FMA the hot loops run in assembly; every
// assembly routine has a pure-Go twin that is used elsewhere, or everywhere
// when the package is built with the purego tag.
//
// Shapes of work: a single activation row (decode) streams weight rows one
// after another through row-loop dot kernels (memory bound); batches use
// register tiles so that each weight vector loaded serves several activation
// rows: 4x3 (rows x batch) for float weights, 1x8 row tiles for float batches
// of 8-15, 2x4 for Q8_0/Q4_0/Q5_0, and for Q8_0 where the CPU has
// AVX512-VNNI, 4x1..4x4 tiles for batches of 2-4 and 4x8 tiles (each
// 512-bit lane one activation row and one four-code chunk of a weight row,
// activations offset to unsigned and packed by q8PackGo, weight codes
// broadcast straight from the mapped blocks, their sums' excess from a
// table of int16 code sums each weight makes once, two lanes added per block) from 5 on, both
// adding each block in the same order so that, from two rows on, a row's
// result does not depend on the batch around it; 4x6 AVX-512 tiles
// for F32/F16 and AVX512_BF16 (VDPBF16PS) tiles for BF16 where the CPU has
// those (written by internal/tilegen; F16 and BF16 equal the AVX2 tiles bit
// for bit, F32 adds in the 16-lane order of ggml's AVX-512 build); and 1x4
// (and 1x2 for Q4_K) tiles for Q4_K/Q5_K/Q6_K that unpack each
// super-block once for four activation rows (ktile.go; their outputs equal
// the row dot products' bit for bit). Q5_1 uses row dot products for every
// batch size.
//
// The package assumes a little-endian host, as GGUF data is little-endian.
package kernels
