package cpu

import (
	"math"
	"math/bits"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/sample"
)

// sample draws the next token of s from its logits row, through the
// request's constraint (structured outputs, tool calls) when it has one.
func (e *Engine) sample(s *sequence, row []float32) (int, error) {
	if s.req.Constraint == nil {
		id := s.sampler.Sample(row)
		s.sampler.Accept(id)
		return id, nil
	}
	// Tokens the sequence may still produce: its limit, and the context
	// window (which ends the sequence once cache.Len()+1 reaches it).
	remaining := min(s.req.MaxTokens-s.generated, e.info.MaxContext-s.cache.Len())
	return sampleConstrained(s.sampler, s.req.Constraint, row, remaining, &s.masked, s.req.Logprobs >= 0)
}

// sampleConstrained samples from row with every token c does not allow at
// -Inf. When the row is still needed afterwards (keepRow: its logprobs are
// reported, and they are the model's own) the masking happens on a copy
// in buf; otherwise in place, which saves copying the vocabulary.
func sampleConstrained(smp *sample.Sampler, c runtime.Constraint, row []float32, remaining int, buf *[]float32, keepRow bool) (int, error) {
	allowed, err := c.Allowed(remaining)
	if err != nil {
		return 0, err
	}
	masked := row
	if keepRow {
		if cap(*buf) < len(row) {
			*buf = make([]float32, len(row))
		}
		masked = (*buf)[:len(row)]
		copy(masked, row)
	}
	maskLogits(masked, allowed)
	id := smp.Sample(masked)
	if err := c.Accept(id); err != nil {
		return 0, err
	}
	smp.Accept(id)
	return id, nil
}

// ninf64 is a block of -Inf logits, copied over fully disallowed blocks.
var ninf64 = func() (b [64]float32) {
	for i := range b {
		b[i] = float32(math.Inf(-1))
	}
	return b
}()

// maskLogits sets the logits of tokens not in allowed to -Inf.
func maskLogits(logits []float32, allowed []uint64) {
	ninf := float32(math.Inf(-1))
	for w := 0; w*64 < len(logits); w++ {
		var word uint64
		if w < len(allowed) {
			word = allowed[w]
		}
		if word == math.MaxUint64 {
			continue
		}
		block := logits[w*64 : min(len(logits), w*64+64)]
		if word == 0 {
			copy(block, ninf64[:])
			continue
		}
		for off := ^word; off != 0; off &= off - 1 {
			if i := bits.TrailingZeros64(off); i < len(block) {
				block[i] = ninf
			}
		}
	}
}
