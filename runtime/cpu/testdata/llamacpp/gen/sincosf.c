// sincosf prints glibc's sinf and cosf (as llama.cpp's rope calls them, on
// this x86-64 machine with FMA: glibc 2.36) for the arguments
// runtime/cpu/internal/kernels/sincosf_test.go checks kernels.Sincosf
// against: ggml's rope angles for positions 0..32 of a 64-wide head at
// freq_base 10000 (theta from the position, times powf(10000, -2.0f/64)
// per pair) and for positions 120, 517, ... 4090 (glibc's large-argument
// reduction from 120 on), 600 float32 values spread over (-120, 120) and
// 400 over [120, 2^31) by their bit patterns, both signs. JSON, float32
// bit patterns: [x, sin, cos].
//
//   gcc -O2 gen/sincosf.c -lm -o /tmp/sincosf && /tmp/sincosf > sincosf.json
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int first = 1;

static void emit(float x) {
	float s = sinf(x), c = cosf(x);
	uint32_t bx, bs, bc;
	memcpy(&bx, &x, 4);
	memcpy(&bs, &s, 4);
	memcpy(&bc, &c, 4);
	printf("%s\n  [%u, %u, %u]", first ? "" : ",", bx, bs, bc);
	first = 0;
}

int main(void) {
	printf("{\"glibc\": \"2.36 x86-64 (FMA variants)\", \"values\": [");
	const float ts = powf(10000.0f, -2.0f / 64);
	for (int pos = 0; pos <= 32; pos++) {
		float theta = (float)pos;
		for (int j = 0; j < 32; j++) {
			emit(theta);
			theta *= ts;
		}
	}
	for (int pos = 120; pos <= 4096; pos += 397) {
		float theta = (float)pos;
		for (int j = 0; j < 32; j++) {
			emit(theta);
			theta *= ts;
		}
	}
	const uint32_t top = 0x42f00000u; // 120.0f
	for (uint32_t i = 0; i < 300; i++) {
		uint32_t u = (uint32_t)((uint64_t)top * i / 300) + i;
		float x;
		memcpy(&x, &u, 4);
		emit(x);
		emit(-x);
	}
	const uint32_t big = 0x4f000000u; // 2^31
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t u = top + (uint32_t)((uint64_t)(big - top) * i / 200) + i;
		float x;
		memcpy(&x, &u, 4);
		emit(x);
		emit(-x);
	}
	printf("\n]}\n");
	return 0;
}
