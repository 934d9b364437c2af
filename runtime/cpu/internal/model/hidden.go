package model

// Hidden returns the final-norm hidden states of the wanted tokens of the
// last Forward, Dim floats per wanted token in batch order: the vectors
// the output head turned into logits, which embeddings pool. The slice is
// reused by the next call.
func (r *Runner) Hidden() []float32 {
	return r.outIn[:len(r.wantRows)*r.m.Cfg.Dim]
}
