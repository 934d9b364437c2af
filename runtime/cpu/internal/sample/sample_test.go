package sample

import (
	"math"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
)

// logitsOf returns logits whose softmax is probs.
func logitsOf(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		if p == 0 {
			l[i] = -1e30
			continue
		}
		l[i] = float32(math.Log(p)) + 3 // an offset softmax must ignore
	}
	return l
}

func TestDistributions(t *testing.T) {
	base := []float64{0.4, 0.3, 0.2, 0.1}
	tests := []struct {
		name string
		p    runtime.Sampling
		want []float64
	}{
		{"temperature 1", runtime.Sampling{Temperature: 1}, []float64{0.4, 0.3, 0.2, 0.1}},
		{"top-k 2", runtime.Sampling{Temperature: 1, TopK: 2}, []float64{0.4 / 0.7, 0.3 / 0.7, 0, 0}},
		{"top-p 0.6", runtime.Sampling{Temperature: 1, TopP: 0.6}, []float64{0.4 / 0.7, 0.3 / 0.7, 0, 0}},
		{"top-p 0.4", runtime.Sampling{Temperature: 1, TopP: 0.4}, []float64{1, 0, 0, 0}},
		{"top-p 0.95", runtime.Sampling{Temperature: 1, TopP: 0.95}, []float64{0.4, 0.3, 0.2, 0.1}},
		{"min-p 0.5", runtime.Sampling{Temperature: 1, MinP: 0.5}, []float64{0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0}},
		{"top-k 3 then top-p 0.7", runtime.Sampling{Temperature: 1, TopK: 3, TopP: 0.7}, []float64{0.4 / 0.7, 0.3 / 0.7, 0, 0}},
		// Temperature 0.5 squares the probabilities before renormalising.
		{"temperature 0.5", runtime.Sampling{Temperature: 0.5}, []float64{0.16 / 0.3, 0.09 / 0.3, 0.04 / 0.3, 0.01 / 0.3}},
		{"greedy", runtime.Sampling{}, []float64{1, 0, 0, 0}},
	}
	const draws = 6000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Seed, tt.p.HasSeed = 42, true
			s := New(tt.p, len(base), nil)
			logits := logitsOf(base...)
			got := make([]float64, len(base))
			for range draws {
				got[s.Sample(logits)]++
			}
			for i := range got {
				got[i] /= draws
				// 4.5 standard deviations of a binomial proportion.
				tol := 4.5*math.Sqrt(tt.want[i]*(1-tt.want[i])/draws) + 1e-9
				if math.Abs(got[i]-tt.want[i]) > tol {
					t.Errorf("token %d frequency %.4f, want %.4f ± %.4f (all %v)", i, got[i], tt.want[i], tol, got)
				}
			}
		})
	}
}

func TestLargeVocabTopP(t *testing.T) {
	// A long flat tail: the nucleus needs the threshold search to go deep.
	const vocab = 1000
	probs := make([]float64, vocab)
	probs[0] = 0.5
	for i := 1; i < vocab; i++ {
		probs[i] = 0.5 / (vocab - 1)
	}
	s := New(runtime.Sampling{Temperature: 1, TopP: 0.9, Seed: 1, HasSeed: true}, vocab, nil)
	logits := logitsOf(probs...)
	first := 0
	for range 2000 {
		if s.Sample(logits) == 0 {
			first++
		}
	}
	// Nucleus: token 0 plus 80% of the tail, so P(0) = 0.5/0.9.
	if got := float64(first) / 2000; math.Abs(got-0.5/0.9) > 0.05 {
		t.Errorf("P(token 0) = %.3f, want %.3f", got, 0.5/0.9)
	}
}

func TestSeedReproducible(t *testing.T) {
	logits := logitsOf(0.25, 0.25, 0.25, 0.25)
	run := func(seed int64) []int {
		s := New(runtime.Sampling{Temperature: 1, Seed: seed, HasSeed: true}, 4, nil)
		out := make([]int, 32)
		for i := range out {
			out[i] = s.Sample(logits)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same := func(x, y []int) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Errorf("seed 7 gave %v then %v", a, b)
	}
	if same(a, c) {
		t.Errorf("seeds 7 and 8 gave the same 32 draws %v", a)
	}
}

func TestPenalties(t *testing.T) {
	tests := []struct {
		name      string
		p         runtime.Sampling
		prompt    []int
		generated []int
		logits    []float32
		want      []float32
	}{
		{
			name:      "presence and frequency over generated only",
			p:         runtime.Sampling{PresencePenalty: 0.5, FrequencyPenalty: 0.25},
			prompt:    []int{3},
			generated: []int{1, 1, 2},
			logits:    []float32{1, 1, 1, 1},
			want:      []float32{1, 1 - 0.5 - 0.5, 1 - 0.5 - 0.25, 1},
		},
		{
			name:      "repetition divides positive, multiplies negative, prompt and generated",
			p:         runtime.Sampling{RepetitionPenalty: 2},
			prompt:    []int{0, 0},
			generated: []int{1},
			logits:    []float32{4, -4, 4, -4},
			want:      []float32{2, -8, 4, -4},
		},
		{
			name:   "repetition 1 is off",
			p:      runtime.Sampling{RepetitionPenalty: 1},
			prompt: []int{0},
			logits: []float32{4, -4},
			want:   []float32{4, -4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p, len(tt.logits), tt.prompt)
			for _, g := range tt.generated {
				s.Accept(g)
			}
			w := append([]float32(nil), tt.logits...)
			s.applyPenalties(w)
			for i := range w {
				if math.Abs(float64(w[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("penalised logits %v, want %v", w, tt.want)
				}
			}
		})
	}
}

func TestGreedyWithPenalty(t *testing.T) {
	s := New(runtime.Sampling{FrequencyPenalty: 2}, 3, nil)
	logits := []float32{3, 2, 0}
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("first greedy pick %d, want 0", got)
	}
	s.Accept(0)
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("after a frequency penalty greedy picks %d, want 1", got)
	}
	if logits[0] != 3 {
		t.Fatalf("Sample modified its input: %v", logits)
	}
}

func TestLogprobs(t *testing.T) {
	logits := logitsOf(0.5, 0.25, 0.125, 0.125)
	tests := []struct {
		id, n   int
		want    float64
		wantTop []int
	}{
		{id: 1, n: 0, want: math.Log(0.25)},
		{id: 3, n: 2, want: math.Log(0.125), wantTop: []int{0, 1}},
		{id: 0, n: 10, want: math.Log(0.5), wantTop: []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		lp, top := Logprobs(logits, tt.id, tt.n, nil)
		if math.Abs(float64(lp)-tt.want) > 1e-5 {
			t.Errorf("logprob of %d = %v, want %v", tt.id, lp, tt.want)
		}
		if len(top) != len(tt.wantTop) {
			t.Fatalf("top %d: got %v, want ids %v", tt.n, top, tt.wantTop)
		}
		for i, id := range tt.wantTop {
			if top[i].ID != id {
				t.Errorf("top[%d] = %d, want %d (%v)", i, top[i].ID, id, top)
			}
			if math.Abs(float64(top[i].Logprob-(logits[id]-LogSumExp(logits)))) > 1e-5 {
				t.Errorf("top[%d] logprob %v", i, top[i].Logprob)
			}
		}
	}
}
