package sim

// next draws the token after s.prev, within the request's constraint when
// it has one (structured outputs, tool calls): the text model's choice is
// made among the allowed tokens only.
func (e *Engine) next(s *sequence) (int, error) {
	c := s.req.Constraint
	if c == nil {
		return s.smp.next(e.model, s.prev, s.req.IgnoreEOS), nil
	}
	remaining := min(s.req.MaxTokens-s.produced, e.cfg.MaxContext-s.ctxLen)
	allowed, err := c.Allowed(remaining)
	if err != nil {
		return 0, err
	}
	id := s.smp.nextAllowed(e.model, s.prev, s.req.IgnoreEOS, allowed)
	if err := c.Accept(id); err != nil {
		return 0, err
	}
	return id, nil
}
