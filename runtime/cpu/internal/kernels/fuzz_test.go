package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// FuzzWeight feeds arbitrary tensor bytes, types and shapes (as a GGUF file
// might declare them) through NewWeight and, when it accepts them, through
// DequantizeRow and MatMul: garbage content (NaN scales, any codes) must
// never crash a kernel, and the two must agree wherever both are finite.
func FuzzWeight(f *testing.F) {
	f.Add(uint32(gguf.TypeQ8_0), uint8(2), uint16(32), []byte("0123456789012345678901234567890123456789012345678901234567890123456789"))
	f.Add(uint32(gguf.TypeQ4_K), uint8(1), uint16(256), make([]byte, 144))
	f.Add(uint32(gguf.TypeQ5_0), uint8(2), uint16(32), make([]byte, 44))
	f.Add(uint32(gguf.TypeQ5_1), uint8(1), uint16(64), []byte("Q5_1 seed: two blocks of arbitrary bytes (48 B)."))
	f.Add(uint32(gguf.TypeQ5_K), uint8(1), uint16(256), make([]byte, 176))
	f.Add(uint32(gguf.TypeF16), uint8(3), uint16(5), []byte{0, 0x7c, 1, 0x7c, 0, 0x3c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	p := NewPool(2)
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, typ uint32, rows uint8, cols uint16, data []byte) {
		w, err := NewWeight(gguf.TensorType(typ), int(rows), int(cols), data)
		if err != nil {
			return
		}
		x := make([]float32, 2*w.Cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		out := make([]float32, 2*w.Rows)
		p.MatMul(out, w, x, 2)
		deq := make([]float32, w.Cols)
		for r := 0; r < w.Rows; r++ {
			DequantizeRow(w, r, deq)
			var want, mag float64
			finite := true
			for c, v := range deq {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					finite = false
				}
				want += float64(v) * float64(x[c])
				mag += math.Abs(float64(v) * float64(x[c]))
			}
			got := float64(out[r])
			if !finite || math.IsInf(got, 0) || math.IsNaN(got) {
				continue
			}
			// Activations are quantized for the block types: allow their
			// error (at most 3/127/2 per element here) plus rounding.
			tol := 1e-3*mag + 0.02*sumAbs(deq) + 1e-3 + minTermBound(w, r, x)
			if math.Abs(got-want) > tol {
				t.Fatalf("%s %dx%d row %d: MatMul %g, dequantized dot %g", w.Type, w.Rows, w.Cols, r, got, want)
			}
		}
	})
}

func sumAbs(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += math.Abs(float64(v))
	}
	return s
}

// minTermBound is the extra error of a Q5_1 product: its block minimum m
// meets the Q8_1 sum term, rounded on its own, so |m| times the block's
// activations can exceed the error bound the dequantized values give (a
// large m cancelled by d*q); 0 for other types.
func minTermBound(w *Weight, r int, x []float32) float64 {
	if w.Type != gguf.TypeQ5_1 {
		return 0
	}
	row := w.Data[r*w.rowBytes():]
	var s float64
	for b := 0; b < w.Cols/32; b++ {
		d := math.Abs(float64(F16ToF32(binary.LittleEndian.Uint16(row[b*blockQ5_1:]))))
		m := math.Abs(float64(F16ToF32(binary.LittleEndian.Uint16(row[b*blockQ5_1+2:]))))
		s += (31*d + m) * sumAbs(x[32*b:32*b+32]) * 0x1p-9
	}
	return s
}
