// Package sample turns a model's next-token logits into a token: penalties,
// temperature, top-k, top-p and min-p truncation, a per-sequence seeded PRNG,
// and log-probabilities of the raw distribution.
package sample

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Sampler holds one sequence's sampling state. It is not safe for concurrent
// use; the engine's scheduler owns it.
type Sampler struct {
	p   runtime.Sampling
	rng *rand.Rand

	// counts[t] is how often t was generated; generated lists each
	// generated token once, so penalties touch only tokens that occurred.
	counts    []int32
	generated []int32
	// seen marks prompt and generated tokens for the repetition penalty;
	// seenList lists them once each.
	seen     []bool
	seenList []int32

	work  []float32 // penalised, tempered logits, then probabilities
	cands []int32   // candidate ids during truncation
}

// New returns a sampler for a vocabulary of vocab tokens. prompt feeds the
// repetition penalty; ids outside the vocabulary are ignored. Without a
// seed the PRNG is seeded randomly.
func New(p runtime.Sampling, vocab int, prompt []int) *Sampler {
	seed := rand.Uint64()
	if p.HasSeed {
		seed = uint64(p.Seed)
	}
	s := &Sampler{
		p:      p,
		rng:    rand.New(rand.NewPCG(seed, 0x7474697373616d70)), // "ttissamp"
		counts: make([]int32, vocab),
		seen:   make([]bool, vocab),
		work:   make([]float32, vocab),
	}
	if s.repetitionActive() {
		for _, t := range prompt {
			s.markSeen(t)
		}
	}
	return s
}

func (s *Sampler) repetitionActive() bool {
	return s.p.RepetitionPenalty > 0 && s.p.RepetitionPenalty != 1
}

func (s *Sampler) markSeen(t int) {
	if t < 0 || t >= len(s.seen) || s.seen[t] {
		return
	}
	s.seen[t] = true
	s.seenList = append(s.seenList, int32(t))
}

// Accept records a generated token for the penalties.
func (s *Sampler) Accept(id int) {
	if id < 0 || id >= len(s.counts) {
		return
	}
	if s.counts[id] == 0 {
		s.generated = append(s.generated, int32(id))
	}
	s.counts[id]++
	if s.repetitionActive() {
		s.markSeen(id)
	}
}

// Sample picks the next token from logits (len = vocab), which it does not
// modify.
func (s *Sampler) Sample(logits []float32) int {
	if s.p.Temperature <= 0 && !s.penalised() {
		return kernels.Argmax(logits)
	}
	w := s.work[:len(logits)]
	copy(w, logits)
	s.applyPenalties(w)
	if s.p.Temperature <= 0 {
		return kernels.Argmax(w)
	}
	return s.sampleTruncated(w)
}

// penalised reports whether any penalty can change the logits.
func (s *Sampler) penalised() bool {
	return s.repetitionActive() || s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0
}

// applyPenalties applies the repetition penalty (CTRL / vLLM: positive
// logits divided, negative multiplied, over prompt and generated tokens)
// and the OpenAI presence and frequency penalties (over generated tokens).
func (s *Sampler) applyPenalties(w []float32) {
	if s.repetitionActive() {
		r := s.p.RepetitionPenalty
		for _, t := range s.seenList {
			if w[t] > 0 {
				w[t] /= r
			} else {
				w[t] *= r
			}
		}
	}
	if s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0 {
		for _, t := range s.generated {
			w[t] -= s.p.FrequencyPenalty*float32(s.counts[t]) + s.p.PresencePenalty
		}
	}
}

// sampleTruncated applies temperature, top-k, top-p and min-p, then draws
// from what is left.
func (s *Sampler) sampleTruncated(w []float32) int {
	// Softmax at temperature: w becomes probabilities.
	top := kernels.Argmax(w)
	kernels.Scale(w, 1/s.p.Temperature)
	kernels.Softmax(w)
	pmax := w[top]

	// Candidates: every token that can survive truncation, most likely
	// first. min-p gives a hard floor; top-p only needs the smallest prefix
	// of the sorted order whose mass reaches TopP, so candidates are
	// collected above a falling threshold until they hold that mass, which
	// avoids sorting the whole vocabulary.
	floor := float32(0)
	if s.p.MinP > 0 && s.p.MinP <= 1 {
		floor = s.p.MinP * pmax
	}
	topP := s.p.TopP
	if topP <= 0 || topP >= 1 {
		topP = 1
	}
	topK := s.p.TopK
	if topK <= 0 || topK > len(w) {
		topK = len(w)
	}
	if topK == len(w) && topP == 1 {
		// No ranking needed: draw over every token above the min-p floor.
		var total float64
		for _, p := range w {
			if p >= floor {
				total += float64(p)
			}
		}
		u := s.rng.Float64() * total
		last := 0
		for i, p := range w {
			if p >= floor && p > 0 {
				last = i
				u -= float64(p)
				if u < 0 {
					return i
				}
			}
		}
		return last
	}
	if !(floor >= 0) { // NaN logits
		floor = 0
	}
	thr := pmax * 1e-2
	// Each round lowers the threshold 1000-fold; after a dozen rounds it is
	// 0 and takes every token, so the loop is bounded.
	for round := 0; ; round++ {
		if !(thr > floor) { // also when thr is NaN (NaN logits)
			thr = floor
		}
		s.cands = s.cands[:0]
		var mass float64
		for i, p := range w {
			if p >= thr && p > 0 {
				s.cands = append(s.cands, int32(i))
				mass += float64(p)
			}
		}
		// Any token below thr ranks after every candidate, so the
		// candidates hold the top k once there are k of them, and the
		// nucleus once their mass reaches TopP.
		done := thr <= floor || thr == 0 || round >= 12
		if topK < len(w) {
			done = done || len(s.cands) >= topK
		} else {
			done = done || mass >= float64(topP)
		}
		if done {
			break
		}
		thr *= 1e-3
		if thr < 1e-30 || round == 11 {
			thr = 0
		}
	}
	c := s.cands
	if len(c) == 0 {
		// Nothing has a positive probability (NaN logits): fall back to
		// the most likely token rather than fail.
		return top
	}
	slices.SortFunc(c, func(a, b int32) int {
		if w[a] != w[b] {
			if w[a] > w[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	if len(c) > topK {
		c = c[:topK]
	}
	if topP < 1 {
		var kept float64
		for _, t := range c {
			kept += float64(w[t])
		}
		// Nucleus over the top-k renormalised distribution.
		var cum float64
		for i, t := range c {
			cum += float64(w[t])
			if cum >= float64(topP)*kept*(1-1e-6) { // float rounding must not add a token
				c = c[:i+1]
				break
			}
		}
	}
	var total float64
	for _, t := range c {
		total += float64(w[t])
	}
	u := s.rng.Float64() * total
	for _, t := range c {
		u -= float64(w[t])
		if u < 0 {
			return int(t)
		}
	}
	return int(c[len(c)-1])
}

// LogSumExp returns log Σ exp(logits), the normaliser of log-softmax.
func LogSumExp(logits []float32) float32 {
	maxv := logits[kernels.Argmax(logits)]
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - maxv))
	}
	return maxv + float32(math.Log(sum))
}

// Logprobs returns the log-softmax of logits at id and, when n > 0, the n
// most likely tokens with their log-probabilities (most likely first),
// appended to top[:0].
func Logprobs(logits []float32, id, n int, top []runtime.TokenLogprob) (float32, []runtime.TokenLogprob) {
	lse := LogSumExp(logits)
	top = top[:0]
	if n > len(logits) {
		n = len(logits)
	}
	for i, v := range logits {
		if v != v { // NaN ranks nowhere
			continue
		}
		if len(top) == n && (n == 0 || v <= top[n-1].Logprob) {
			continue
		}
		// Insert into the descending list, dropping the last when full.
		pos := len(top)
		for pos > 0 && top[pos-1].Logprob < v {
			pos--
		}
		if len(top) < n {
			top = append(top, runtime.TokenLogprob{})
		}
		copy(top[pos+1:], top[pos:len(top)-1])
		top[pos] = runtime.TokenLogprob{ID: i, Logprob: v}
	}
	for i := range top {
		top[i].Logprob -= lse
	}
	return logits[id] - lse, top
}
