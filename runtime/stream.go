package runtime

import (
	"context"
	"sync"
)

// Stream carries one sequence's tokens from an engine to the server. The
// engine calls SetPromptLogprobs (optionally), Push for each token and
// Finish once; the server calls Recv until it reports the end.
//
// The buffer is unbounded (a sequence never holds more than MaxTokens), so a
// slow client never stalls the engine's batch loop.
type Stream struct {
	mu         sync.Mutex
	pending    []Token
	promptLP   []Token
	finished   bool
	reason     FinishReason
	err        error
	wake       chan struct{}
	promptToks int
	cached     int
	onTaken    func()
}

// NewStream returns an empty stream for a prompt of promptTokens tokens.
func NewStream(promptTokens int) *Stream {
	return &Stream{wake: make(chan struct{}, 1), promptToks: promptTokens}
}

// PromptTokens is the prompt length the stream was created for.
func (s *Stream) PromptTokens() int { return s.promptToks }

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SetCachedTokens records how many leading prompt tokens the engine took
// from its prefix cache instead of computing them (usage's
// prompt_tokens_details.cached_tokens). Engines call it before the first
// Push.
func (s *Stream) SetCachedTokens(n int) {
	s.mu.Lock()
	s.cached = n
	s.mu.Unlock()
}

// CachedTokens is what SetCachedTokens recorded (0 without a prefix cache).
func (s *Stream) CachedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cached
}

// SetPromptLogprobs records the prompt tokens' logprobs (one entry per prompt
// token; the first has no logprob and carries Logprob 0 and no Top).
func (s *Stream) SetPromptLogprobs(lp []Token) {
	s.mu.Lock()
	s.promptLP = lp
	s.mu.Unlock()
}

// PromptLogprobs returns what SetPromptLogprobs recorded. It is complete once
// the first Recv has returned.
func (s *Stream) PromptLogprobs() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.promptLP
}

// SetOnTaken registers f, called (outside the stream's lock) each time
// Recv hands pending tokens over to the consumer. An engine that paces its
// steps on how fast the server takes their output uses it; set it before
// the first Push.
func (s *Stream) SetOnTaken(f func()) { s.onTaken = f }

// Push appends a generated token. Pushing after Finish is ignored.
func (s *Stream) Push(t Token) {
	s.mu.Lock()
	if !s.finished {
		s.pending = append(s.pending, t)
	}
	s.mu.Unlock()
	s.signal()
}

// Finish ends the stream with a reason and, for FinishAbort, an optional
// error. Only the first call counts.
func (s *Stream) Finish(reason FinishReason, err error) {
	s.mu.Lock()
	if !s.finished {
		s.finished = true
		s.reason = reason
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

// Recv waits for tokens and appends every pending one to buf. When the
// stream has ended and nothing is pending it returns done=true with the
// finish reason and error. It returns ctx.Err() if ctx ends first.
func (s *Stream) Recv(ctx context.Context, buf []Token) (toks []Token, done bool, reason FinishReason, err error) {
	for {
		s.mu.Lock()
		if len(s.pending) > 0 {
			buf = append(buf, s.pending...)
			s.pending = s.pending[:0]
			s.mu.Unlock()
			if s.onTaken != nil {
				s.onTaken()
			}
			return buf, false, FinishNone, nil
		}
		if s.finished {
			r, e := s.reason, s.err
			s.mu.Unlock()
			return buf, true, r, e
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return buf, false, FinishNone, ctx.Err()
		}
	}
}

// Wait is Recv with a wake-up channel for callers that multiplex several
// sources (heartbeats, timers): it returns a channel that receives when Recv
// may have something new.
func (s *Stream) Wait() <-chan struct{} { return s.wake }
