// Package kernels holds the compute kernels of the cpu runtime: matrix
// multiplication against weights stored in GGUF tensor types (F32, F16, BF16,
// Q8_0, Q4_0, Q4_K, Q6_K), the quantizers that produce those types, the
// vector operations a transformer forward pass needs, and the worker pool the
// matrix products run on.
//
// Quantized products follow llama.cpp's scheme: the activations are quantized
// once per call (Q8_0 blocks for Q8_0/Q4_0 weights, Q8_K blocks for K-quant
// weights) and every weight block meets its activation block in an integer dot
// product, so a weight matrix is streamed once per call and never dequantized
// as a whole. On amd64 with AVX2 and FMA the hot loops run in assembly; every
// assembly routine has a pure-Go twin that is used elsewhere, or everywhere
// when the package is built with the purego tag.
package kernels
