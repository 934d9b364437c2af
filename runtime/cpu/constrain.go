package cpu

import "math"

// sample draws the next token of s from its logits row. A request with a
// constraint (structured outputs, tool calls) samples from the row with
// every token the constraint does not allow at -Inf; the row itself, from
// which logprobs are reported, is left as the model wrote it.
func (e *Engine) sample(s *sequence, row []float32) (int, error) {
	c := s.req.Constraint
	if c == nil {
		id := s.sampler.Sample(row)
		s.sampler.Accept(id)
		return id, nil
	}
	// Tokens the sequence may still produce: its limit, and the context
	// window (which ends the sequence once cache.Len()+1 reaches it).
	remaining := min(s.req.MaxTokens-s.generated, e.info.MaxContext-s.cache.Len())
	allowed, err := c.Allowed(remaining)
	if err != nil {
		return 0, err
	}
	s.masked = maskLogits(s.masked, row, allowed)
	id := s.sampler.Sample(s.masked)
	if err := c.Accept(id); err != nil {
		return 0, err
	}
	s.sampler.Accept(id)
	return id, nil
}

// maskLogits copies row into buf with the logits of tokens not in allowed
// set to -Inf.
func maskLogits(buf, row []float32, allowed []uint64) []float32 {
	if cap(buf) < len(row) {
		buf = make([]float32, len(row))
	}
	buf = buf[:len(row)]
	copy(buf, row)
	ninf := float32(math.Inf(-1))
	for w := 0; w*64 < len(buf); w++ {
		var word uint64
		if w < len(allowed) {
			word = allowed[w]
		}
		if word == math.MaxUint64 {
			continue
		}
		block := buf[w*64 : min(len(buf), w*64+64)]
		if word == 0 {
			for i := range block {
				block[i] = ninf
			}
			continue
		}
		for i := range block {
			if word>>i&1 == 0 {
				block[i] = ninf
			}
		}
	}
	return buf
}
