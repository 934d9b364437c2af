package kernels

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// q6kGgmlState is the xorshift generator of gen/q6kdot.c
// (runtime/cpu/testdata/llamacpp), which made q6k_dot.json.
type q6kGgmlState uint64

func (s *q6kGgmlState) next() uint64 {
	x := uint64(*s)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*s = q6kGgmlState(x)
	return x
}

// TestQ6KMatchesGgml requires every Q6_K kernel (the row dot product, the
// pure-Go one, decode's row loop and the batch tile) to give exactly
// ggml's float32 result (b4747's ggml_vec_dot_q6_K_q8_K as this AVX-512
// machine's GGML_NATIVE build compiles it, its __AVX2__ path) on the
// pseudo-random rows of q6k_dot.json: one weight row against four
// activation rows per case, the activations quantized by ggml's
// quantize_row_q8_K there and by quantizeQ8KGo here.
func TestQ6KMatchesGgml(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "llamacpp", "q6k_dot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fix struct {
		Cases []struct {
			NB   int      `json:"nb"`
			Dots []uint32 `json:"dots"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &fix); err != nil {
		t.Fatalf("q6k_dot.json: %v", err)
	}
	if len(fix.Cases) == 0 {
		t.Fatal("q6k_dot.json: no cases")
	}
	for c, tc := range fix.Cases {
		if tc.NB < 1 || tc.NB > 4 || len(tc.Dots) != kTileActs {
			t.Fatalf("q6k_dot.json case %d: nb %d, %d dots (want 1..4 and %d)", c, tc.NB, len(tc.Dots), kTileActs)
		}
		st := q6kGgmlState(0x9e3779b97f4a7c15 * uint64(c+1))
		nb := int(st.next()%4) + 1
		if nb != tc.NB {
			t.Fatalf("case %d: generator gives nb %d, the fixture %d: gen/q6kdot.c and this test disagree", c, nb, tc.NB)
		}
		w := make([]byte, nb*blockQ6_K)
		for i := range w {
			w[i] = byte(st.next())
		}
		for b := 0; b < nb; b++ {
			d := uint16(0x1800 + st.next()%0x800)
			w[b*blockQ6_K+208], w[b*blockQ6_K+209] = byte(d), byte(d>>8)
		}
		cols := 256 * nb
		xq, xd, xs := make([]int8, kTileActs*cols), make([]float32, kTileActs*nb), make([]int16, kTileActs*16*nb)
		x := make([]float32, cols)
		for a := 0; a < kTileActs; a++ {
			for i := range x {
				x[i] = float32(int(st.next()%20001)-10000) / 1000
			}
			quantizeQ8KGo(x, xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*16*nb:(a+1)*16*nb])
		}
		xs = q6kSumsOf(xq)
		tile := make([]float32, kTileActs)
		q6kTile(w, xq, xd, xs, nb, tile, 1)
		tileGo := make([]float32, kTileActs)
		q6kTile1x4Go(w, xq, xd, xs, nb, tileGo, 1)
		for a, bits := range tc.Dots {
			want := math.Float32frombits(bits)
			aq, ad, as := xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*128*nb:(a+1)*128*nb]
			rows := make([]float32, 1)
			q6kRowDots(w, blockQ6_K*nb, 0, aq, ad, as, rows)
			for _, got := range []struct {
				name string
				v    float32
			}{
				{"dotQ6KGo", dotQ6KGo(w, aq, ad)},
				{"dotQ6K", dotQ6K(w, aq, ad, as)},
				{"q6kRowDots", rows[0]},
				{"q6kTile", tile[a]},
				{"q6kTile1x4Go", tileGo[a]},
			} {
				if math.Float32bits(got.v) != bits {
					t.Errorf("case %d (nb %d) activation %d: %s = %g (%#08x), ggml %g (%#08x)",
						c, nb, a, got.name, got.v, math.Float32bits(got.v), want, bits)
				}
			}
		}
	}
}

// TestQ6KKernelsAgreeAtExtremes requires the Q6_K kernels to agree bit for
// bit where their integer tricks are tightest: codes 0 and 63, scales -128
// and 127, and activation codes -128 and 127 (every kernel subtracts 32
// times their pair sums, q6kPairSums, from words of product pairs), the
// patterns mixed per element.
func TestQ6KKernelsAgreeAtExtremes(t *testing.T) {
	const nb = 2
	cols := 256 * nb
	for pattern := 0; pattern < 8; pattern++ {
		w := make([]byte, nb*blockQ6_K)
		for b := 0; b < nb; b++ {
			blk := w[b*blockQ6_K:]
			for i := 0; i < 192; i++ {
				if (i+pattern)%3 == 0 {
					blk[i] = 0
				} else {
					blk[i] = 0xff // every code 63
				}
			}
			for g := 0; g < 16; g++ {
				blk[192+g] = byte(int8([]int{-128, 127}[(g+pattern)%2]))
			}
			blk[208], blk[209] = 0x00, 0x3c // d = 1
		}
		xq, xd, xs := make([]int8, kTileActs*cols), make([]float32, kTileActs*nb), make([]int16, kTileActs*16*nb)
		for i := range xq {
			xq[i] = []int8{-128, 127, -128, -1}[(i/(pattern+1))%4]
		}
		for i := range xd {
			xd[i] = 0.5 + float32(i)
		}
		for a := 0; a < kTileActs; a++ {
			for g := 0; g < 16*nb; g++ {
				var s int16
				for _, c := range xq[a*cols+16*g : a*cols+16*g+16] {
					s += int16(c)
				}
				xs[a*16*nb+g] = s
			}
		}
		xs = q6kSumsOf(xq)
		tile, tileGo := make([]float32, kTileActs), make([]float32, kTileActs)
		q6kTile(w, xq, xd, xs, nb, tile, 1)
		q6kTile1x4Go(w, xq, xd, xs, nb, tileGo, 1)
		for a := 0; a < kTileActs; a++ {
			aq, ad, as := xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*128*nb:(a+1)*128*nb]
			rows := make([]float32, 1)
			q6kRowDots(w, blockQ6_K*nb, 0, aq, ad, as, rows)
			want := dotQ6KGo(w, aq, ad)
			for name, got := range map[string]float32{"dotQ6K": dotQ6K(w, aq, ad, as), "q6kRowDots": rows[0], "q6kTile": tile[a], "q6kTile1x4Go": tileGo[a]} {
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("pattern %d activation %d: %s = %g, dotQ6KGo %g", pattern, a, name, got, want)
				}
			}
		}
	}
}
