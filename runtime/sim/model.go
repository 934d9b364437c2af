package sim

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/ttis-dev/ttis/runtime"
)

// Text model: a first-order Markov chain. For every token id the model has
// a successor list of fanout candidates (word pieces, a little punctuation
// and EOS) with Zipf-like weights, drawn from a seeded PRNG, so the same
// seed gives the same model everywhere. The full next-token distribution
// mixes that list with a small unigram floor over the whole vocabulary
// (frequent words likelier than rare ones, bytes least likely) so that
// every token, including any prompt token, has a finite logprob that still
// depends on the token:
//
//	p(t | prev) = (1-floor)·succ(t | prev) + floor·unigram(t)
//
// Sampling draws from the successor list only (the floor's tail is
// truncated, like a built-in top-k), after penalties, temperature, top-k,
// top-p and min-p; reported logprobs are log p under the full mixture.
const (
	fanout    = 12
	floorMass = 0.01
	eosWeight = 0.02 // share of the successor mass EOS gets
)

type candidate struct {
	id   int
	prob float64 // successor probability before mixing
	logp float64 // log p(id | prev) under the mixture, cached
}

type textModel struct {
	vocab int
	succ  [][]candidate // per previous token, sorted by prob descending
	// unigram is the floor distribution; byUnigram lists ids by it,
	// likeliest first.
	unigram   []float64
	byUnigram []int
}

func newTextModel(tok *Tokenizer, seed int64) *textModel {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5157_1a7e))
	vocab := tok.VocabSize()
	// Tokens the generator may emit: word pieces with a leading space
	// (capitalised ones rarer) and a little punctuation.
	var gen []int
	for _, p := range punctuation[:emittedPunctuation] {
		gen = append(gen, tok.index[p])
	}
	for i, w := range words {
		gen = append(gen, tok.index[" "+w])
		if i%7 == 0 {
			gen = append(gen, tok.index[" "+capitalise(w)])
		}
	}
	m := &textModel{vocab: vocab, succ: make([][]candidate, vocab), unigram: make([]float64, vocab)}
	total := 0.0
	for id := range m.unigram {
		w := 1.0 // bytes and specials
		if id >= firstWordID {
			w = 4
		}
		m.unigram[id] = w
	}
	for _, p := range punctuation {
		m.unigram[tok.index[p]] = 40
	}
	for rank, w := range words {
		z := 1 / float64(rank+1)
		m.unigram[tok.index[" "+w]] = 8 + 400*z
		m.unigram[tok.index[w]] = 6 + 100*z
		m.unigram[tok.index[" "+capitalise(w)]] = 5 + 50*z
	}
	for _, w := range m.unigram {
		total += w
	}
	m.byUnigram = make([]int, vocab)
	for id := range m.unigram {
		m.unigram[id] /= total
		m.byUnigram[id] = id
	}
	sort.SliceStable(m.byUnigram, func(a, b int) bool { return m.unigram[m.byUnigram[a]] > m.unigram[m.byUnigram[b]] })
	for prev := 0; prev < vocab; prev++ {
		cands := make([]candidate, 0, fanout+1)
		seen := map[int]bool{}
		total := 0.0
		for len(cands) < fanout {
			id := gen[rng.IntN(len(gen))]
			if seen[id] {
				continue
			}
			seen[id] = true
			w := 1 / float64(len(cands)+1) * (0.5 + rng.Float64())
			cands = append(cands, candidate{id: id, prob: w})
			total += w
		}
		for i := range cands {
			cands[i].prob = cands[i].prob / total * (1 - eosWeight)
		}
		cands = append(cands, candidate{id: eosID, prob: eosWeight})
		sort.Slice(cands, func(i, j int) bool { return cands[i].prob > cands[j].prob })
		for i := range cands {
			cands[i].logp = math.Log((1-floorMass)*cands[i].prob + floorMass*m.unigram[cands[i].id])
		}
		m.succ[prev] = cands
	}
	return m
}

// logprob returns log p(id | prev) under the mixture.
func (m *textModel) logprob(prev, id int) float64 {
	if prev < 0 || prev >= m.vocab {
		prev = bosID
	}
	if id < 0 || id >= m.vocab {
		return math.Inf(-1)
	}
	for _, c := range m.succ[prev] {
		if c.id == id {
			return c.logp
		}
	}
	return math.Log(floorMass * m.unigram[id])
}

// top returns the n most likely next tokens after prev with their logprobs.
func (m *textModel) top(prev, n int, buf []runtime.TokenLogprob) []runtime.TokenLogprob {
	if prev < 0 || prev >= m.vocab {
		prev = bosID
	}
	// The successor list dominates (its floor-free mass is far above any
	// unigram share), so the top n are its head, then the likeliest
	// unigrams not in it; sort the union to be exact.
	start := len(buf)
	for _, c := range m.succ[prev] {
		buf = append(buf, runtime.TokenLogprob{ID: c.id, Logprob: float32(m.logprob(prev, c.id))})
	}
	for _, id := range m.byUnigram {
		if len(buf)-start >= n+len(m.succ[prev]) {
			break
		}
		if !m.inSucc(prev, id) {
			buf = append(buf, runtime.TokenLogprob{ID: id, Logprob: float32(m.logprob(prev, id))})
		}
	}
	top := buf[start:]
	sort.SliceStable(top, func(a, b int) bool { return top[a].Logprob > top[b].Logprob })
	return buf[:start+min(n, len(top))]
}

func (m *textModel) inSucc(prev, id int) bool {
	for _, c := range m.succ[prev] {
		if c.id == id {
			return true
		}
	}
	return false
}

// sampler draws tokens for one sequence.
type sampler struct {
	p      runtime.Sampling
	rng    *rand.Rand
	counts map[int]int // generated-token counts, for penalties
	inCtx  map[int]bool
	logits []float64
	ids    []int
	order  []int
	probs  []float64
}

func newSampler(p runtime.Sampling, prompt []int, rng *rand.Rand) *sampler {
	s := &sampler{p: p, rng: rng}
	if p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
		s.counts = map[int]int{}
	}
	if p.RepetitionPenalty != 0 && p.RepetitionPenalty != 1 {
		s.inCtx = map[int]bool{}
		for _, id := range prompt {
			s.inCtx[id] = true
		}
	}
	return s
}

// next picks the token after prev.
func (s *sampler) next(m *textModel, prev int, ignoreEOS bool) int {
	return s.nextAllowed(m, prev, ignoreEOS, nil)
}

// nextAllowed picks the token after prev among those allowed (every token
// when allowed is nil; see runtime.Constraint).
func (s *sampler) nextAllowed(m *textModel, prev int, ignoreEOS bool, allowed []uint64) int {
	if prev < 0 || prev >= m.vocab {
		prev = bosID
	}
	s.logits, s.ids = s.logits[:0], s.ids[:0]
	for _, c := range m.succ[prev] {
		if ignoreEOS && c.id == eosID {
			continue
		}
		if allowed != nil && !isAllowed(allowed, c.id) {
			continue
		}
		l := c.logp
		if s.inCtx != nil && s.inCtx[c.id] {
			// CTRL/vLLM repetition penalty on a logit: divide positive,
			// multiply negative (ours are log-probabilities, all negative).
			r := float64(s.p.RepetitionPenalty)
			if l > 0 {
				l /= r
			} else {
				l *= r
			}
		}
		if s.counts != nil {
			if n := s.counts[c.id]; n > 0 {
				l -= float64(s.p.FrequencyPenalty)*float64(n) + float64(s.p.PresencePenalty)
			}
		}
		s.logits = append(s.logits, l)
		s.ids = append(s.ids, c.id)
	}
	if len(s.logits) == 0 {
		// No successor is allowed: draw from the model's floor, the
		// unigram distribution, over the allowed tokens.
		for _, id := range m.byUnigram {
			if isAllowed(allowed, id) {
				s.logits = append(s.logits, math.Log(m.unigram[id]))
				s.ids = append(s.ids, id)
			}
		}
	}
	id := s.pick()
	if s.counts != nil {
		s.counts[id]++
	}
	if s.inCtx != nil {
		s.inCtx[id] = true
	}
	return id
}

func (s *sampler) pick() int {
	best := 0
	for i, l := range s.logits {
		if l > s.logits[best] {
			best = i
		}
	}
	if s.p.Temperature <= 0 {
		return s.ids[best]
	}
	// Softmax at temperature over the candidates sorted by logit
	// (penalties may reorder the successor list). The buffers are reused
	// across tokens: this runs once per generated token.
	n := len(s.logits)
	s.order = s.order[:0]
	for i := range n {
		s.order = append(s.order, i)
	}
	order := s.order
	// Insertion sort: n is fanout+1.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && s.logits[order[j]] > s.logits[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	t := float64(s.p.Temperature)
	s.probs = s.probs[:0]
	sum := 0.0
	top := s.logits[order[0]]
	for _, i := range order {
		p := math.Exp((s.logits[i] - top) / t)
		s.probs = append(s.probs, p)
		sum += p
	}
	probs := s.probs
	for k := range probs {
		probs[k] /= sum
	}
	keep := n
	if k := s.p.TopK; k > 0 && k < keep {
		keep = k
	}
	if p := float64(s.p.TopP); p > 0 && p < 1 {
		c := 0.0
		for k := 0; k < keep; k++ {
			c += probs[k]
			if c >= p {
				keep = k + 1
				break
			}
		}
	}
	if mp := float64(s.p.MinP); mp > 0 {
		for k := 1; k < keep; k++ {
			if probs[k] < mp*probs[0] {
				keep = k
				break
			}
		}
	}
	total := 0.0
	for k := 0; k < keep; k++ {
		total += probs[k]
	}
	u := s.rng.Float64() * total
	for k := 0; k < keep; k++ {
		u -= probs[k]
		if u <= 0 {
			return s.ids[order[k]]
		}
	}
	return s.ids[order[keep-1]]
}

func isAllowed(bits []uint64, id int) bool {
	return id/64 < len(bits) && bits[id/64]>>(id%64)&1 == 1
}
