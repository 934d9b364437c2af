package sample

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
)

// FuzzSample feeds arbitrary logits (NaN and ±Inf included) and parameters:
// Sample must return an id inside the vocabulary and never panic, and a
// token excluded by top-k must never be drawn.
func FuzzSample(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64}, float32(1), 2, float32(0.9), float32(0.1), float32(0.5), float32(1.2), int64(1))
	f.Add([]byte{0, 0, 192, 127, 0, 0, 128, 255}, float32(0.7), 0, float32(0), float32(0), float32(0), float32(0), int64(2))
	f.Fuzz(func(t *testing.T, raw []byte, temp float32, topK int, topP, minP, presence, repetition float32, seed int64) {
		n := len(raw) / 4
		if n == 0 || n > 4096 {
			return
		}
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		p := runtime.Sampling{Temperature: temp, TopK: topK, TopP: topP, MinP: minP, PresencePenalty: presence, RepetitionPenalty: repetition, Seed: seed, HasSeed: true}
		s := New(p, n, []int{0, n - 1, n + 5, -1})
		for range 3 {
			id := s.Sample(logits)
			if id < 0 || id >= n {
				t.Fatalf("Sample returned %d for a vocabulary of %d", id, n)
			}
			s.Accept(id)
		}
		if lp, top := Logprobs(logits, 0, 3, nil); len(top) > 3 || (len(top) > 0 && top[0].ID >= n) {
			t.Fatalf("Logprobs gave %v %v", lp, top)
		}
	})
}
