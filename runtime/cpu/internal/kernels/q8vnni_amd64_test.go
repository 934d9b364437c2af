//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// exactFMA32 is a*b+c rounded once to float32, as VFMADD231PS computes
// it (fma32 rounds twice, which can differ in rare halfway cases: a pin
// must not).
func exactFMA32(a, b, c float32) float32 {
	const prec = 2000 // holds a*b+c exactly for any float32 operands
	x := new(big.Float).SetPrec(prec).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(prec).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(prec).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// q8VNNIRef is the float order of every Q8_0 VNNI tile (4x4 and the wide
// ones alike), written out in Go: per block, the exact integer dot product
// converted to float32, times the activation scale, fused into the sum
// with the weight scale: sum = fma(dw, float(si)*dx, sum).
func q8VNNIRef(w []byte, xq []int8, xd []float32) float32 {
	var sum float32
	for b := range xd {
		blk := w[b*blockQ8_0 : (b+1)*blockQ8_0]
		var si int32
		for j, q := range xq[32*b : 32*b+32] {
			si += int32(int8(blk[2+j])) * int32(q)
		}
		sum = exactFMA32(F16ToF32(binary.LittleEndian.Uint16(blk)), float32(si)*xd[b], sum)
	}
	return sum
}

// TestMatMulQ8_0VNNIOrder pins the results of batched Q8_0 products bit
// for bit to the tiles' documented float order (q8VNNIRef), for every
// batch of 2 to 17 rows (the 4x4 tiles, the wide tiles and their padded
// last group), on shapes whose row count is not a multiple of any tile:
// the last rows%4 rows take q8Rows and must equal it. Kernel changes may
// reorder integer work freely but not this.
func TestMatMulQ8_0VNNIOrder(t *testing.T) {
	if !haveVNNI {
		t.Skip("CPU lacks AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		// 270 rows: many tiles per thread.
		for _, sh := range [][2]int{{7, 32}, {17, 288}, {38, 96}, {13, 800}, {270, 64}} {
			rows, cols := sh[0], sh[1]
			nb := cols / 32
			src := randVec(rng, rows*cols)
			src[0], src[1] = 1000, -1000 // codes of both signs at full range
			w := mustWeight(t, gguf.TypeQ8_0, rows, cols, src)
			rb := nb * blockQ8_0
			for batch := 2; batch <= 17; batch++ {
				x := randVec(rng, batch*cols)
				xq, xd, xd8 := make([]int8, batch*cols), make([]float32, batch*nb), make([]float32, batch*nb*8)
				quantizeQ8(x, xq, xd, xd8)
				out := make([]float32, batch*rows+1)
				out[batch*rows] = 42 // must not be written
				p.MatMul(out, w, x, batch)
				if out[batch*rows] != 42 {
					t.Fatalf("%dx%d batch %d: MatMul wrote past batch*Rows", rows, cols, batch)
				}
				tileRows := rows &^ 3
				tail := make([]float32, rows-tileRows)
				for b := range batch {
					xb, db := xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb]
					for r := range tileRows {
						want := q8VNNIRef(w.Data[r*rb:(r+1)*rb], xb, db)
						if got := out[b*rows+r]; got != want {
							t.Fatalf("%dx%d batch %d threads %d: out[%d][%d] = %g, the tiles' order gives %g", rows, cols, batch, threads, b, r, got, want)
						}
					}
					if len(tail) > 0 {
						q8Rows(w.Data[tileRows*rb:rows*rb], rb, xb, db, tail)
						for i, want := range tail {
							if got := out[b*rows+tileRows+i]; got != want {
								t.Fatalf("%dx%d batch %d: out[%d][%d] = %g, q8Rows gives %g", rows, cols, batch, b, tileRows+i, got, want)
							}
						}
					}
				}
			}
		}
		p.Close()
	}
}
