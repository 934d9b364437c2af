//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// TestAsmQ5 holds the five-bit assembly dot products to their pure-Go twins
// bit for bit (both follow ggml's AVX2 order of float operations): on
// quantized random weights, and on random block bytes (every code and
// fifth-bit pattern) with unit scales.
func TestAsmQ5(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(41, 42))
	const one = 0x3c00 // 1.0 in half precision
	for _, nb := range []int{1, 2, 3, 9} {
		for _, typ := range []gguf.TensorType{gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K} {
			t.Run(fmt.Sprintf("%s/%dblocks", typ, nb), func(t *testing.T) {
				cols := typ.BlockSize() * nb
				x := randVec(rng, cols)
				xq := make([]int8, cols)
				xd := make([]float32, cols/32)
				xd8 := make([]float32, cols/4)
				xs1 := make([]float32, cols/32)
				kd, ks := make([]float32, cols/256+1), make([]int16, cols/16)
				if typ == gguf.TypeQ5_K {
					kd = kd[:cols/256]
					quantizeQ8KGo(x, xq, kd, ks)
				} else {
					quantizeQ8Go(x, xq, xd, xd8)
					q8_1Sums(x, xq, xs1)
				}
				asm := func(w []byte) float32 {
					switch typ {
					case gguf.TypeQ5_0:
						return q5_0DotAVX(w, xq, xd)
					case gguf.TypeQ5_1:
						return q5_1DotAVX(w, xq, xd, xs1)
					}
					return q5kDotAVX(w, xq, kd, ks)
				}
				ref := func(w []byte) float32 {
					switch typ {
					case gguf.TypeQ5_0:
						return dotQ5_0Go(w, xq, xd)
					case gguf.TypeQ5_1:
						return dotQ5_1Go(w, xq, xd, xs1)
					}
					return dotQ5KGo(w, xq, kd, ks)
				}
				src := randVec(rng, cols)
				for i := range src {
					src[i] *= float32(1 + i/32%5) // vary the block scales
				}
				w := mustWeight(t, typ, 1, cols, src)
				if got, want := asm(w.Data), ref(w.Data); got != want {
					t.Fatalf("quantized weights: asm %g, go %g", got, want)
				}

				// Exact: random bytes, scales 1 (Q5_1 min 1, sum terms and
				// activation scales whole numbers).
				raw := make([]byte, len(w.Data))
				for i := range raw {
					raw[i] = byte(rng.Uint32())
				}
				ts := typ.TypeSize()
				for b := 0; b < nb; b++ {
					raw[b*ts], raw[b*ts+1] = one&0xff, one>>8
					if typ != gguf.TypeQ5_0 {
						raw[b*ts+2], raw[b*ts+3] = one&0xff, one>>8
					}
				}
				for i := range xd {
					xd[i] = 1
					xs1[i] = float32(rng.IntN(2001) - 1000)
				}
				for i := range kd {
					kd[i] = 1
				}
				if got, want := asm(raw), ref(raw); got != want {
					t.Fatalf("random bytes, unit scales: asm %g, go %g", got, want)
				}
			})
		}
	}
}

// TestAsmQ5_0Tile requires every output of the 2x4 Q5_0 tile to equal the
// row kernel's bit for bit, and MatMul's tiled batches to equal its
// single-row calls.
func TestAsmQ5_0Tile(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(43, 44))
	for _, nb := range []int{1, 2, 9} {
		cols := 32 * nb
		rb := nb * blockQ5_0
		w := mustWeight(t, gguf.TypeQ5_0, 2, cols, randVec(rng, 2*cols))
		const batch = 4
		x := randVec(rng, batch*cols)
		xq, xd, xd8 := make([]int8, batch*cols), make([]float32, batch*nb), make([]float32, batch*nb*8)
		quantizeQ8Go(x, xq, xd, xd8)
		const os = 7
		out := make([]float32, 3*os+2)
		q5_0Tile2x4(w.Data, rb, xq, cols, xd8, nb, out, os)
		for b := 0; b < batch; b++ {
			for r := 0; r < 2; r++ {
				want := q5_0DotAVX(w.Data[r*rb:(r+1)*rb], xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb])
				if got := out[b*os+r]; got != want {
					t.Fatalf("nb=%d act %d row %d: tile %g, dot %g", nb, b, r, got, want)
				}
			}
		}
	}
	p := NewPool(2)
	defer p.Close()
	const rows, cols, batch = 13, 96, 7
	w := mustWeight(t, gguf.TypeQ5_0, rows, cols, randVec(rng, rows*cols))
	x := randVec(rng, batch*cols)
	out := make([]float32, batch*rows)
	p.MatMul(out, w, x, batch)
	one := make([]float32, rows)
	for b := 0; b < batch; b++ {
		p.MatMul(one, w, x[b*cols:(b+1)*cols], 1)
		for r, want := range one {
			if got := out[b*rows+r]; got != want {
				t.Fatalf("batch row %d, weight row %d: %g, single-row MatMul %g", b, r, got, want)
			}
		}
	}
}
