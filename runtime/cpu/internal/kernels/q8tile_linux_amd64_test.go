//go:build !purego

package kernels

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// TestAsmQ8Tile4x8VNNI holds the 4x8 tile, called directly, to the tiles'
// float order (q8VNNIRef) bit for bit: 1..9 blocks, weights and their
// code sums ending at a guard page (it must not read past its last row)
// and an output with gaps after each row's four values that
// must stay untouched.
func TestAsmQ8Tile4x8VNNI(t *testing.T) {
	if !haveVNNI {
		t.Skip("CPU lacks AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	const sentinel = 42
	for _, nb := range []int{1, 2, 3, 4, 9} {
		cols := 32 * nb
		rb := nb * blockQ8_0
		const rows = 4
		src := randVec(rng, rows*cols)
		src[0], src[1] = 1000, -1000 // codes of both signs at full range
		data, err := Quantize(gguf.TypeQ8_0, src)
		if err != nil {
			t.Fatal(err)
		}
		// The extremes of the code sums (every code -128, every code 127)
		// in rows 1 and 2's last block.
		for c := range 32 {
			data[1*rb+(nb-1)*blockQ8_0+2+c] = 0x80
			data[2*rb+(nb-1)*blockQ8_0+2+c] = 0x7f
		}
		w := guarded(t, data)
		wc := guardedInt16(t, q8VNNICorr(data, rows, nb, rb))
		for _, batch := range []int{5, 8} {
			x := randVec(rng, batch*cols)
			xq, xd, xd8 := make([]int8, batch*cols), make([]float32, batch*nb), make([]float32, batch*nb*8)
			quantizeQ8(x, xq, xd, xd8)
			xp, xpd := make([]int8, q8PackRows*cols), make([]float32, q8PackScales*nb)
			q8PackGo(xq, xd, batch, cols, xp, xpd)
			os := rows + 3
			out := make([]float32, 8*os)
			for i := range out {
				out[i] = sentinel
			}
			q8Tile4x8VNNI(w, rb, wc, xp, xpd, nb, out[:7*os+rows], os)
			for b := range 8 {
				for c := range os {
					got := out[b*os+c]
					if c >= rows {
						if got != sentinel {
							t.Fatalf("nb=%d batch %d: out[%d][%d] written (%g)", nb, batch, b, c, got)
						}
						continue
					}
					want := float32(0) // padding rows: zero codes and scales
					if b < batch {
						want = q8VNNIRef(w[c*rb:(c+1)*rb], xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb])
					}
					if got != want {
						t.Fatalf("nb=%d batch %d: out[%d][%d] = %g, the tiles' order gives %g", nb, batch, b, c, got, want)
					}
				}
			}
		}
	}
}

// guardedInt16 is guarded for a table of int16 (the tile's code sums).
func guardedInt16(t *testing.T, v []int16) []int16 {
	t.Helper()
	b := guarded(t, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v)))
	return unsafe.Slice((*int16)(unsafe.Pointer(&b[0])), len(v))
}
