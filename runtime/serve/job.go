package serve

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// errClientGone ends a stream whose client stopped reading.
var errClientGone = errors.New("client went away")

// errClientStalled ends a stream whose client has acknowledged nothing
// for the write timeout while output waited for it: it stopped reading,
// and the kernel's socket buffers would otherwise absorb a slow stream's
// writes (and hold its slot) for many minutes before a write blocked.
var errClientStalled = errors.New("client stopped reading")

// closedCtx makes Stream.Recv non-blocking: it returns what is pending or
// the end of the stream, else ctx.Err() at once.
var closedCtx = func() context.Context {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	return c
}()

// job is one generation request (completions, chat, the legacy API): one
// sequence per (prompt, n). Its life: newJob plans it (generate.go), admit
// claims its slots, tokenize finishes its prompts, waitSlots waits for
// queued slots, start hands its sequences to the engine, pump moves their
// tokens to a sink (sse.go: a stream, or the collected response) until
// they end, and end gives back what it still holds.
type job struct {
	s       *Server
	st      *engineState
	r       *genRequest
	f       format // the route's output (format.go)
	id      string // request id (logs, X-Request-Id)
	respID  string // cmpl-… / chatcmpl-…
	created int64
	arrival time.Time

	// texts are the prompts still to tokenize (tokenize), prompts the
	// token ids of every prompt once tokenized.
	texts       []string
	prompts     [][]int
	promptTexts []string // echo only
	promptToks  int
	seqs        []*seqState
	stopIDs     map[int]bool

	// toolSyntax is how the chat template asked for tool calls.
	toolSyntax runtime.ToolSyntax
	// ix is the index the output is constrained by (nil: none).
	ix *grammar.Index

	head []byte // SSE chunk head, see appendChunkHead

	ctx    context.Context
	cancel context.CancelFunc
	// slots are the job's slots: one per sequence until it ends, or
	// places in the wait queue (admit.go).
	slots slotClaim
}

// seqState is one choice being generated.
type seqState struct {
	index  int
	prompt int
	req    runtime.Request
	st     *runtime.Stream
	cancel context.CancelFunc
	m      stopMatcher
	buf    []runtime.Token
	events []event

	started  bool // chat role chunk sent
	done     bool
	tokens   int
	finish   string
	stop     any // stop_reason: the matched string or token id
	err      error
	offset   int // text_offset of the next token (code points)
	acquired time.Time
	first    time.Time
	last     time.Time

	// Non-streaming accumulation.
	text []byte
	lps  []runtime.Token

	// tools reads tool calls out of the output (tools.go); callIDs are
	// the ids given to them, sawCalls says some were reported.
	tools    *toolcall.Parser
	callIDs  []string
	sawCalls bool
}

// event is a piece of output: text and, with logprobs, the token it came
// from.
type event struct {
	text   []byte
	calls  []toolcall.Delta
	tok    runtime.Token
	hasTok bool
}

// waitSlots waits in the queue for the job's slots, calling ping (if
// non-nil) every heartbeat; a failing ping gives up.
func (j *job) waitSlots(ping func() error) error {
	return j.slots.wait(j.ctx, ping)
}

// start hands every sequence to the engine.
func (j *job) start() *apiError {
	now := time.Now()
	j.s.m.queue.observe(now.Sub(j.arrival).Seconds())
	for _, q := range j.seqs {
		ctx, cancel := context.WithCancel(j.ctx)
		st, err := j.st.eng.Generate(ctx, &q.req)
		if err != nil {
			cancel()
			for _, p := range j.seqs {
				if p.cancel != nil {
					p.cancel()
				}
			}
			if errors.Is(err, runtime.ErrContextLength) {
				return badRequest("prompt", "%v", err)
			}
			return &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "runtime: " + err.Error()}
		}
		q.st, q.cancel, q.acquired = st, cancel, now
		j.s.m.promptTokens.Add(uint64(len(q.req.Prompt)))
	}
	return nil
}

// end releases whatever the job still holds.
func (j *job) end() {
	for _, q := range j.seqs {
		if q.cancel != nil {
			q.cancel()
		}
		if !q.done && q.st != nil {
			j.s.m.finished("abort")
		}
	}
	j.slots.end()
	if j.cancel != nil {
		j.cancel()
	}
}

// ctxError maps a failed wait to an API error.
func (j *job) ctxError(err error) *apiError {
	return waitError(err, j.slots.lv.RequestTimeout)
}

// sink receives a sequence's output.
type sink interface {
	// emit takes q.events (and, when final, the end of q).
	emit(j *job, q *seqState, final bool)
	flush() error
	ping() error
}

// pump moves tokens from the engine to the sink until every sequence has
// ended, the client went away (errClientGone) or the job's context ended.
func (j *job) pump(out sink) error {
	wake := j.wakeup()
	var tick <-chan time.Time
	if _, ok := out.(*sseSink); ok {
		t := time.NewTicker(j.s.cfg.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	active := len(j.seqs)
	for active > 0 {
		wrote := false
		for _, q := range j.seqs {
			if q.done {
				continue
			}
			ended := j.drain(q)
			if len(q.events) > 0 || ended {
				j.emit(out, q, ended)
				wrote = true
			}
			if ended {
				active--
				j.finishSeq(q)
			}
		}
		if wrote {
			if err := out.flush(); err != nil {
				return errClientGone
			}
		}
		if active == 0 {
			break
		}
		select {
		case <-wake:
		case <-tick:
			if err := out.ping(); err != nil {
				return errClientGone
			}
		case <-j.ctx.Done():
			err := j.ctx.Err()
			for _, q := range j.seqs {
				if !q.done {
					q.finish, q.err = "abort", err
					j.endText(q, q.m.flush())
					j.emit(out, q, true)
					j.finishSeq(q)
				}
			}
			_ = out.flush()
			return err
		}
	}
	return nil
}

func (j *job) emit(out sink, q *seqState, final bool) {
	out.emit(j, q, final)
	q.events = q.events[:0]
}

// wakeup returns a channel that receives when any sequence may have news.
func (j *job) wakeup() <-chan struct{} {
	if len(j.seqs) == 1 {
		return j.seqs[0].st.Wait()
	}
	shared := make(chan struct{}, 1)
	for _, q := range j.seqs {
		go func(w <-chan struct{}, done <-chan struct{}) {
			for {
				select {
				case <-w:
					select {
					case shared <- struct{}{}:
					default:
					}
				case <-done:
					return
				}
			}
		}(q.st.Wait(), j.ctx.Done())
	}
	return shared
}

// drain takes every pending token of q into q.events without blocking and
// reports whether q has ended.
func (j *job) drain(q *seqState) bool {
	for range 1 << 20 { // bounded: each round consumes tokens or returns
		toks, done, reason, err := q.st.Recv(closedCtx, q.buf[:0])
		q.buf = toks
		if len(toks) > 0 {
			if j.process(q, toks) {
				j.endText(q, nil)
				return true
			}
			continue
		}
		if !done {
			return false
		}
		j.endText(q, q.m.flush())
		switch reason {
		case runtime.FinishStop, runtime.FinishLength:
			q.finish = reason.String()
		default:
			q.finish, q.err = "abort", err
		}
		return true
	}
	return false
}

// process turns tokens into events; it reports true when a stop string or
// stop token ended the sequence (the engine is told to stop).
func (j *job) process(q *seqState, toks []runtime.Token) bool {
	m := j.s.m
	for i := range toks {
		t := toks[i]
		q.tokens++
		m.generationTokens.Add(1)
		if q.tokens == 1 {
			q.first = t.Time
			m.ttft.observe(t.Time.Sub(j.arrival).Seconds())
		} else {
			m.itl.observe(t.Time.Sub(q.last).Seconds())
		}
		q.last = t.Time
		if j.stopIDs[t.ID] && !j.st.eos[t.ID] {
			q.finish, q.stop = "stop", t.ID
			j.addEvent(q, nil, t, j.r.logprobs >= 0)
			q.cancel()
			return true
		}
		var text []byte
		if !j.st.tok.IsSpecial(t.ID) {
			rel, hit := q.m.add(j.st.tok.TokenBytes(t.ID))
			text = rel
			if hit >= 0 {
				if j.r.includeStop {
					text = append(append([]byte(nil), text...), j.r.stop[hit]...)
				}
				q.finish, q.stop = "stop", j.r.stop[hit]
				j.addEvent(q, text, t, j.r.logprobs >= 0)
				q.cancel()
				return true
			}
		} else if q.tools != nil && !j.st.eos[t.ID] {
			// A control token such as Mistral's [TOOL_CALLS] marks tool
			// calls: the parser reads its name (it is never content).
			text = []byte(tokenString(j.st.tok, t.ID))
		}
		j.addEvent(q, text, t, j.r.logprobs >= 0)
	}
	return false
}

// finishSeq frees q's slot and records its metrics.
func (j *job) finishSeq(q *seqState) {
	q.done = true
	if q.cancel != nil {
		q.cancel()
	}
	j.slots.release(1)
	m := j.s.m
	m.finished(q.finish)
	now := time.Now()
	m.e2e.observe(now.Sub(j.arrival).Seconds())
	if q.tokens > 0 {
		m.prefixQueries.Add(uint64(len(q.req.Prompt)))
		m.prefixHits.Add(uint64(q.st.CachedTokens()))
		m.prefill.observe(q.first.Sub(q.acquired).Seconds())
		m.decode.observe(q.last.Sub(q.first).Seconds())
		m.inference.observe(q.last.Sub(q.acquired).Seconds())
	}
}
