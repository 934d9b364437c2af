// q6kdot prints ggml's Q6_K x Q8_K dot products (the CPU backend's
// vec_dot for GGML_TYPE_Q6_K, which this build compiles from
// ggml_vec_dot_q6_K_q8_K's __AVX2__ path) for pseudo-random rows that
// runtime/cpu/internal/kernels/q6k_ggml_test.go regenerates with the same
// xorshift generator: one weight row of nb super-blocks against four
// activation rows per case, the activations quantized by ggml's
// quantize_row_q8_K (the traits' from_float). Output: JSON, the results
// as float32 bit patterns.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"

static uint64_t state;

static uint64_t next(void) {
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

enum { QK = 256, BLOCK_Q6K = 210, BLOCK_Q8K = 4 + 256 + 32, ACTS = 4, MAXNB = 4 };

int main(void) {
	ggml_cpu_init();
	const struct ggml_type_traits_cpu *q6 = ggml_get_type_traits_cpu(GGML_TYPE_Q6_K);
	const struct ggml_type_traits_cpu *q8 = ggml_get_type_traits_cpu(GGML_TYPE_Q8_K);
	static uint8_t w[MAXNB * BLOCK_Q6K];
	static uint8_t y[MAXNB * BLOCK_Q8K];
	static float x[MAXNB * QK];
	const int cases = 48;
	printf("{\"cases\": [\n");
	for (int c = 0; c < cases; c++) {
		state = 0x9e3779b97f4a7c15ull * (uint64_t)(c + 1);
		int nb = 1 + (int)(next() % MAXNB);
		for (int i = 0; i < nb * BLOCK_Q6K; i++) {
			w[i] = (uint8_t)next();
		}
		for (int b = 0; b < nb; b++) {
			// d: a positive F16 between 2^-9 and 2^-7 (finite, normal)
			uint16_t d = (uint16_t)(0x1800 + next() % 0x800);
			w[b * BLOCK_Q6K + 208] = (uint8_t)d;
			w[b * BLOCK_Q6K + 209] = (uint8_t)(d >> 8);
		}
		printf("  {\"nb\": %d, \"dots\": [", nb);
		for (int a = 0; a < ACTS; a++) {
			for (int i = 0; i < nb * QK; i++) {
				x[i] = (float)((int)(next() % 20001) - 10000) / 1000.0f;
			}
			q8->from_float(x, y, nb * QK);
			float s;
			q6->vec_dot(nb * QK, &s, 0, w, 0, y, 0, 1);
			uint32_t bits;
			memcpy(&bits, &s, 4);
			printf("%s%u", a ? ", " : "", bits);
		}
		printf("]}%s\n", c + 1 < cases ? "," : "");
	}
	printf("]}\n");
	return 0;
}
