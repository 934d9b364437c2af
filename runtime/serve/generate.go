package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"
	"unicode/utf8"

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

// job is one completions or chat request: one sequence per (prompt, n).
type job struct {
	s       *Server
	st      *engineState
	r       *genRequest
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

	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration // limits.request_timeout when the request came
	held    int64         // slots held
	queued  int64         // sequences counted in the waiting gauge
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

// generate handles both generation endpoints. Admission comes before
// work (admit.go): the body was admitted to the reading budget by handle;
// here the prompts are judged by their length, the request takes its
// slots or queue places, and only then are its prompts tokenized, after
// which its body and prompt texts are let go.
func (s *Server) generate(ctx *fasthttp.RequestCtx, st *engineState, reqID string, chat bool, arrival time.Time) {
	var r *genRequest
	var e *apiError
	if chat {
		r, e = decodeChat(ctx.PostBody())
	} else {
		r, e = decodeCompletion(ctx.PostBody())
	}
	if e == nil {
		e = s.checkModel(st, r.model)
	}
	if e == nil && r.echo && r.stream {
		e = badRequest("echo", "echo is not supported with stream=true")
	}
	var j *job
	if e == nil {
		j, e = s.newJob(st, r, reqID, arrival)
	}
	if e != nil {
		writeError(ctx, e)
		return
	}
	if lv, ok := s.admit(j, arrival); !ok {
		s.refuseBusy(ctx, lv)
		return
	}
	if e := j.tokenize(); e != nil {
		j.end()
		writeError(ctx, e)
		return
	}
	s.doneReading(ctx)
	if r.stream {
		// The stream is written straight to the connection from this
		// handler goroutine: fasthttp's SetBodyStreamWriter would add a
		// pipe and a goroutine hop per flush. Hijacking with no response
		// makes fasthttp write nothing after it; the handler still counts
		// as an open connection, so ShutdownWithContext waits for it. A
		// stream that ends cleanly keeps its connection (see keepConn).
		conn := ctx.Conn()
		http11 := ctx.Request.Header.IsHTTP11()
		keep := http11 && !ctx.Request.Header.ConnectionClose() && !s.draining.Load()
		ctx.HijackSetNoResponse(true)
		keep = j.stream(conn, keep, http11)
		ctx.Hijack(func(hc net.Conn) { s.keepConn(conn, hc, keep) })
		return
	}
	defer j.end()
	if j.queued > 0 {
		if err := j.waitSlots(nil); err != nil {
			writeError(ctx, j.ctxError(err))
			return
		}
	}
	if e := j.start(); e != nil {
		writeError(ctx, e)
		return
	}
	if err := j.pump(collectSink{}); err != nil {
		writeError(ctx, j.ctxError(err))
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(j.appendResponse(make([]byte, 0, 1024)))
}

// doneReading ends a tokenized request's hold on the reading budget and
// lets its body go: what it still holds (token ids) is bounded by its
// slots and the context window.
func (s *Server) doneReading(ctx *fasthttp.RequestCtx) {
	s.endRead(ctx)
	ctx.Request.ResetBody()
}

// admit takes the job's slots, or puts it in the wait queue; it reports
// false when the queue is full. It starts the job's context, bounded by
// limits.request_timeout from the request's arrival. Both limits are the
// live ones (a SIGHUP may change them while the server runs), returned
// for messages.
func (s *Server) admit(j *job, arrival time.Time) (Live, bool) {
	n := int64(len(j.seqs))
	queued, lv, ok := s.takeSlots(n)
	if !ok {
		return lv, false
	}
	if queued {
		j.queued = n
	} else {
		j.held = n
	}
	j.timeout = lv.RequestTimeout
	j.ctx, j.cancel = s.requestContext(arrival, lv.RequestTimeout)
	return lv, true
}

// newJob plans a job without tokenizing: it renders the chat template,
// judges every prompt against the context window by its length (a text
// prompt by its bytes, see minTokens; a token-id prompt exactly), and
// lays out one sequence per (prompt, n). tokenize finishes it once the
// job holds its slots or queue places.
func (s *Server) newJob(st *engineState, r *genRequest, reqID string, arrival time.Time) (*job, *apiError) {
	j := &job{s: s, st: st, r: r, id: reqID, created: arrival.Unix(), arrival: arrival}
	if r.chat {
		j.respID = "chatcmpl-" + newID()
		text, syntax, e := chatPrompt(st, r)
		if e != nil {
			return nil, e
		}
		j.toolSyntax = syntax
		j.texts = []string{text}
		// The rendered prompt holds the conversation from here on.
		r.messages = nil
	} else {
		j.respID = "cmpl-" + newID()
		j.texts = r.promptTexts
		for i, ids := range r.promptIDs {
			param := "prompt"
			if len(r.promptIDs) > 1 {
				param = fmt.Sprintf("prompt[%d]", i)
			}
			if e := checkIDs(ids, st.tok.VocabSize(), param); e != nil {
				return nil, e
			}
		}
		if r.echo {
			j.promptTexts = r.promptTexts
			for _, ids := range r.promptIDs {
				j.promptTexts = append(j.promptTexts, st.tok.Decode(ids, true))
			}
		}
	}
	prompts := len(j.texts) + len(r.promptIDs)
	if n := prompts * r.n; n > s.cfg.MaxConcurrency {
		return nil, badRequest("n", "the request needs %d sequences (prompts × n) but the unit has %d slots (limits.max_concurrency)", n, s.cfg.MaxConcurrency)
	}
	for _, t := range j.texts {
		if e := j.checkContext(minTokens(st.tok, t), len(t)); e != nil {
			return nil, e
		}
	}
	for _, ids := range r.promptIDs {
		if e := j.checkContext(len(ids), -1); e != nil {
			return nil, e
		}
	}
	if len(r.stopTokenIDs) > 0 {
		j.stopIDs = make(map[int]bool, len(r.stopTokenIDs))
		for _, id := range r.stopTokenIDs {
			j.stopIDs[id] = true
		}
	}
	ix, e := st.constraintIndex(r.constraint)
	if e != nil {
		return nil, e
	}
	j.ix = ix
	if r.maxTokens >= 0 {
		if e := j.checkOutputFits(r.maxTokens, -1); e != nil {
			return nil, e
		}
	}
	for pi := range prompts {
		for c := 0; c < r.n; c++ {
			q := &seqState{index: pi*r.n + c, prompt: pi, m: newStopMatcher(r.stop)}
			q.tools = j.newToolParser()
			q.req = runtime.Request{
				ID: j.id, Sampling: r.sampling, StopTokenIDs: r.stopTokenIDs,
				IgnoreEOS: r.ignoreEOS, Logprobs: r.logprobs, PromptLogprobs: -1,
			}
			if r.n > 1 {
				q.req.ID = j.id + "-" + strconv.Itoa(c)
				if r.sampling.HasSeed {
					// Distinct but reproducible choices.
					q.req.Sampling.Seed += int64(c)
				}
			}
			if r.echo && r.logprobs >= 0 {
				q.req.PromptLogprobs = r.logprobs
			}
			if ix != nil {
				q.req.Constraint = ix.NewMatcher()
			}
			j.seqs = append(j.seqs, q)
		}
	}
	return j, nil
}

// minTokens is the fewest tokens text can encode to, from its length
// alone: ceil(bytes / the most bytes a token covers) with a tokenizer
// that bounds it (runtime.TextBounder), else 0 (nothing is known).
func minTokens(tok runtime.Tokenizer, text string) int {
	b, ok := tok.(runtime.TextBounder)
	if !ok {
		return 0
	}
	per := max(b.MaxTokenBytes(), 1)
	return (len(text) + per - 1) / per
}

// checkContext refuses a prompt of at least toks tokens (exactly toks
// when bytes < 0, else a lower bound judged from its bytes) that cannot
// fit the context window with the completion the request asks for. Every
// check only ever refuses what the exact one, after tokenizing, would.
func (j *job) checkContext(toks, bytes int) *apiError {
	r, limit := j.r, j.st.maxContext
	what := "prompt"
	if r.chat {
		what = "messages"
	}
	mt := r.maxTokens
	if mt < 0 {
		mt = max(limit-toks, 0)
	}
	if !(toks > limit || (toks == limit && mt > 0) || toks+mt > limit) {
		return nil
	}
	param := r.maxTokensArg
	if toks >= limit {
		param = what
	}
	if bytes >= 0 {
		return badRequest(param, "This model's maximum context length is %d tokens. However, you requested at least %d tokens (at least %d in the %s, which is %d bytes, %d in the completion). Please reduce the length of the %s or completion.", limit, toks+mt, toks, what, bytes, mt, what)
	}
	return badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or completion.", limit, toks+mt, toks, what, mt, what)
}

// checkOutputFits refuses a constrained request whose token limit cannot
// hold a complete output: the limit is max_tokens, or (promptToks >= 0)
// what a prompt of that many tokens leaves of the context window. An
// output cut short would not parse, so ttis answers 400 where vLLM
// returns the cut output with finish_reason "length".
func (j *job) checkOutputFits(limit, promptToks int) *apiError {
	if j.ix == nil {
		return nil
	}
	ok, need, exact := j.ix.Fits(limit)
	if ok {
		return nil
	}
	c := j.r.constraint
	why := fmt.Sprintf("the shortest output %s allows takes %d tokens of this model's vocabulary", c.param, need)
	if !exact {
		why = fmt.Sprintf("ttis can promise a complete output %s allows from %d tokens (its shortest output's bytes, one token each)", c.param, need)
	}
	if promptToks >= 0 {
		what := "prompt"
		if j.r.chat {
			what = "messages"
		}
		return badRequest(what, "the %s (%d tokens) leaves %d tokens of the model's %d-token context window for the output, but %s; shorten the %s", what, promptToks, limit, j.st.maxContext, why, what)
	}
	return badRequest(j.r.maxTokensArg, "%s is %d, but %s; set %s to at least %d (a structured output cut short would not parse)", j.r.maxTokensArg, limit, why, j.r.maxTokensArg, need)
}

// tokenize encodes the job's text prompts (the job holds its slots or
// queue places by now), checks every prompt exactly against the context
// window, and gives each sequence its prompt and token limit. The prompt
// texts are let go unless echo needs them.
func (j *job) tokenize() *apiError {
	r, st := j.r, j.st
	what := "prompt"
	if r.chat {
		what = "messages"
	}
	j.prompts = make([][]int, 0, len(j.texts)+len(r.promptIDs))
	for i, t := range j.texts {
		ids, err := st.tok.Encode(t, r.addSpecial)
		if err != nil {
			if r.chat {
				return badRequest("messages", "tokenize: %v", err)
			}
			return badRequest("prompt", "tokenize prompt %d: %v", i, err)
		}
		j.prompts = append(j.prompts, ids)
	}
	j.prompts = append(j.prompts, r.promptIDs...)
	j.texts, r.promptTexts, r.promptIDs = nil, nil, nil
	maxTokens := make([]int, len(j.prompts))
	for pi, p := range j.prompts {
		if len(p) == 0 {
			return badRequest(what, "the %s is empty after tokenization", what)
		}
		if e := j.checkContext(len(p), -1); e != nil {
			return e
		}
		j.promptToks += len(p)
		mt := r.maxTokens
		if mt < 0 {
			mt = st.maxContext - len(p)
			if e := j.checkOutputFits(mt, len(p)); e != nil {
				return e
			}
		}
		maxTokens[pi] = mt
	}
	for _, q := range j.seqs {
		q.req.Prompt, q.req.MaxTokens = j.prompts[q.prompt], maxTokens[q.prompt]
	}
	return nil
}

// waitSlots waits in the queue for the job's slots, calling ping (if
// non-nil) every heartbeat; a failing ping gives up.
func (j *job) waitSlots(ping func() error) error {
	n := j.queued
	got := make(chan error, 1)
	go func() { got <- j.s.awaitSlots(j.ctx, n) }()
	var tick <-chan time.Time
	if ping != nil {
		t := time.NewTicker(j.s.cfg.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-got:
			j.queued = 0
			if err != nil {
				return err
			}
			j.held = n
			return nil
		case <-tick:
			if err := ping(); err != nil {
				j.cancel()
				if err := <-got; err == nil {
					j.s.releaseSlots(n)
				}
				j.queued = 0
				return errClientGone
			}
		}
	}
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
	if j.held > 0 {
		j.s.releaseSlots(j.held)
		j.held = 0
	}
	if j.queued > 0 {
		j.s.m.waiting.Add(-j.queued)
		j.queued = 0
	}
	if j.cancel != nil {
		j.cancel()
	}
}

// ctxError maps a failed wait to an API error.
func (j *job) ctxError(err error) *apiError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: fasthttp.StatusRequestTimeout, Type: "TimeoutError", Message: fmt.Sprintf("the request did not finish within limits.request_timeout (%s)", j.timeout)}
	case errors.Is(err, context.Canceled):
		return &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the request was cancelled because the server is shutting down"}
	}
	return &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()}
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
	if j.held > 0 {
		j.s.releaseSlots(1)
		j.held--
	}
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

// stream writes the whole SSE response, headers included, to conn. With
// keep (which needs chunked) it offers the client to keep the connection;
// it reports whether the response ended cleanly with that offer, so the
// connection may serve the client's next request. Without chunked (an
// HTTP/1.0 client) the body is bare, ended by closing the connection.
func (j *job) stream(conn net.Conn, keep, chunked bool) (kept bool) {
	k := j.s.sinks.Get().(*sseSink)
	k.conn, k.timeout, k.deadline, k.chunked = conn, j.s.cfg.WriteTimeout, time.Time{}, chunked
	k.acked, k.progressAt = 0, time.Time{}
	status := "ok"
	defer func() {
		k.conn = nil
		if cap(k.buf) <= 64<<10 && cap(k.frame) <= 64<<10 {
			k.buf, k.frame = k.buf[:0], k.frame[:0]
			j.s.sinks.Put(k)
		}
		if p := recover(); p != nil {
			j.s.log.Error("panic while streaming", "request_id", j.id, "panic", p)
			status = "panic"
		}
		j.end()
		if j.s.log.Enabled(context.Background(), slog.LevelDebug) {
			j.s.log.Debug("request", "request_id", j.id, "stream", true, "sequences", len(j.seqs), "result", status, "duration", time.Since(j.arrival))
		}
	}()
	// fail ends the response with an error event; the connection stays
	// usable if that is written.
	fail := func(e *apiError, why string) bool {
		k.error(e)
		status = why
		return k.end() == nil && keep
	}
	if err := k.header(j.id, keep); err != nil {
		status = "client gone"
		return false
	}
	if j.queued > 0 {
		if err := j.waitSlots(k.ping); err != nil {
			if errors.Is(err, errClientGone) {
				status = "client gone"
				return false
			}
			return fail(j.ctxError(err), err.Error())
		}
	}
	if e := j.start(); e != nil {
		return fail(e, e.Message)
	}
	err := j.pump(k)
	switch {
	case errors.Is(err, errClientGone):
		status = "client gone"
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return fail(j.ctxError(err), "timeout")
	case err != nil:
		status = err.Error()
	}
	if j.r.includeUsage {
		k.buf = j.appendChunkHead(k.buf, false)
		k.buf = append(k.buf, `[],"usage":`...)
		k.buf = j.appendUsage(k.buf)
		k.buf = append(k.buf, "}\n\n"...)
	}
	k.buf = append(k.buf, "data: [DONE]\n\n"...)
	if k.flush() != nil {
		return false
	}
	return k.end() == nil && keep
}

// sseSink writes server-sent events as HTTP/1.1 chunks straight to the
// connection.
type sseSink struct {
	conn     net.Conn
	timeout  time.Duration
	deadline time.Time
	chunked  bool   // HTTP/1.1 chunked framing; HTTP/1.0 gets the bare body
	buf      []byte // pending events
	frame    []byte // buf with its chunk framing
	// acked is the peer's acknowledged byte count when it last grew (or
	// nothing was pending), at progressAt; see stalled.
	acked      uint64
	progressAt time.Time
}

// header writes the response head; without keep it says the connection
// closes after the response.
func (k *sseSink) header(reqID string, keep bool) error {
	k.frame = append(k.frame[:0], "HTTP/1.1 200 OK\r\nServer: ttis\r\nDate: "...)
	k.frame = time.Now().UTC().AppendFormat(k.frame, "Mon, 02 Jan 2006 15:04:05 GMT")
	k.frame = append(k.frame, "\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nX-Request-Id: "...)
	k.frame = append(k.frame, reqID...)
	if !keep {
		k.frame = append(k.frame, "\r\nConnection: close"...)
	}
	if k.chunked {
		k.frame = append(k.frame, "\r\nTransfer-Encoding: chunked"...)
	}
	k.frame = append(k.frame, "\r\n\r\n"...)
	return k.write()
}

// end writes the last chunk.
func (k *sseSink) end() error {
	if !k.chunked {
		return nil
	}
	k.frame = append(k.frame[:0], "0\r\n\r\n"...)
	return k.write()
}

func (k *sseSink) write() error {
	if k.timeout > 0 {
		now := time.Now()
		if now.Add(k.timeout - time.Second).After(k.deadline) {
			// Once a second at most, like the deadline's renewal.
			if k.stalled(now) {
				return errClientStalled
			}
			k.deadline = now.Add(k.timeout)
			_ = k.conn.SetWriteDeadline(k.deadline)
		}
	}
	_, err := k.conn.Write(k.frame)
	return err
}

// stalled reports whether the client has acknowledged none of the output
// waiting for it for longer than the write timeout. A write deadline alone
// does not catch a client that stops reading: each write lands in the
// socket buffers (megabytes) and succeeds, so a slow stream would keep its
// slot until those filled.
func (k *sseSink) stalled(now time.Time) bool {
	acked, pending, ok := peerProgress(k.conn)
	if !ok {
		return false
	}
	if k.progressAt.IsZero() || acked != k.acked || !pending {
		k.acked, k.progressAt = acked, now
		return false
	}
	return now.Sub(k.progressAt) > k.timeout
}

func (k *sseSink) emit(j *job, q *seqState, final bool) {
	k.buf = j.appendChunks(k.buf, q, final)
}

// flush writes the buffered events as one chunk with one write. It renews
// the connection's write deadline at most once a second, so a client that
// stops reading fails the write within WriteTimeout.
func (k *sseSink) flush() error {
	if len(k.buf) == 0 {
		return nil
	}
	if !k.chunked {
		k.frame = append(k.frame[:0], k.buf...)
	} else {
		k.frame = strconv.AppendInt(k.frame[:0], int64(len(k.buf)), 16)
		k.frame = append(k.frame, '\r', '\n')
		k.frame = append(k.frame, k.buf...)
		k.frame = append(k.frame, '\r', '\n')
	}
	k.buf = k.buf[:0]
	return k.write()
}

func (k *sseSink) ping() error {
	k.buf = append(k.buf, ": ping\n\n"...)
	return k.flush()
}

// error sends an in-stream error event and [DONE].
func (k *sseSink) error(e *apiError) {
	k.buf = append(k.buf, "data: "...)
	k.buf = e.appendJSON(k.buf)
	k.buf = append(k.buf, "\n\ndata: [DONE]\n\n"...)
	_ = k.flush()
}

// collectSink accumulates a non-streaming response.
type collectSink struct{}

func (collectSink) emit(j *job, q *seqState, _ bool) {
	for _, e := range q.events {
		q.text = append(q.text, e.text...)
		if e.hasTok {
			q.lps = append(q.lps, e.tok)
		}
	}
}
func (collectSink) flush() error { return nil }
func (collectSink) ping() error  { return nil }

// appendChunkHead starts an SSE event up to the choices array's opening
// (with withChoice, up to and including the choice's "index":). The head is
// the same for every chunk of a job, so it is built once.
func (j *job) appendChunkHead(b []byte, withChoice bool) []byte {
	if j.head == nil {
		j.head = j.buildChunkHead(nil)
	}
	b = append(b, j.head...)
	if withChoice {
		b = append(b, `[{"index":`...)
	}
	return b
}

func (j *job) buildChunkHead(b []byte) []byte {
	b = append(b, `data: {"id":"`...)
	b = append(b, j.respID...)
	if j.r.chat {
		b = append(b, `","object":"chat.completion.chunk","created":`...)
	} else {
		b = append(b, `","object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, j.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, j.s.cfg.Model)
	return append(b, `,"choices":`...)
}

func (j *job) appendChunkTail(b []byte) []byte {
	b = append(b, "}]"...)
	if j.r.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

// appendChunks writes one chunk per event; the last carries the finish
// reason when final.
func (j *job) appendChunks(b []byte, q *seqState, final bool) []byte {
	if j.r.chat && !q.started {
		q.started = true
		b = j.appendChunkHead(b, true)
		b = strconv.AppendInt(b, int64(q.index), 10)
		b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		if j.r.includeUsage {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, "}\n\n"...)
	}
	evs := q.events
	if final && len(evs) == 0 {
		evs = []event{{}}
	}
	for i := range evs {
		e := &evs[i]
		last := final && i == len(evs)-1
		b = j.appendChunkHead(b, true)
		b = strconv.AppendInt(b, int64(q.index), 10)
		if j.r.chat {
			b = append(b, `,"delta":{`...)
			if len(e.text) > 0 || (!last && len(e.calls) == 0) {
				b = append(b, `"content":`...)
				b = appendJSONString(b, e.text)
				if len(e.calls) > 0 {
					b = append(b, ',')
				}
			}
			if len(e.calls) > 0 {
				b = j.appendToolCallDeltas(b, q, e.calls)
			}
			b = append(b, `},"logprobs":`...)
			if e.hasTok {
				b = append(b, `{"content":[`...)
				b = j.appendChatLogprob(b, e.tok)
				b = append(b, "]}"...)
			} else {
				b = append(b, "null"...)
			}
		} else {
			b = append(b, `,"text":`...)
			b = appendJSONString(b, e.text)
			b = append(b, `,"logprobs":`...)
			if e.hasTok {
				b = j.appendCompletionLogprobs(b, []runtime.Token{e.tok}, false, &q.offset)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"finish_reason":`...)
		if last {
			b = appendJSONString(b, j.finishReason(q))
			b = append(b, `,"stop_reason":`...)
			b = appendStopReason(b, q.stop)
		} else {
			b = append(b, "null"...)
		}
		b = j.appendChunkTail(b)
	}
	return b
}

func appendStopReason(b []byte, v any) []byte {
	switch s := v.(type) {
	case string:
		return appendJSONString(b, s)
	case int:
		return strconv.AppendInt(b, int64(s), 10)
	}
	return append(b, "null"...)
}

func (j *job) appendUsage(b []byte) []byte {
	gen := 0
	for _, q := range j.seqs {
		gen += q.tokens
	}
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(j.promptToks), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(j.promptToks+gen), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(gen), 10)
	// The prompt tokens the engine's prefix cache served, counted once per
	// prompt (the n choices of a prompt share it), shown when there are any.
	cached := 0
	for _, q := range j.seqs {
		if q.st != nil && q.index%max(j.r.n, 1) == 0 {
			cached += q.st.CachedTokens()
		}
	}
	if cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendChatLogprob writes one entry of chat logprobs.content.
func (j *job) appendChatLogprob(b []byte, t runtime.Token) []byte {
	tok := j.st.tok
	one := func(b []byte, id int, lp float32) []byte {
		s := tokenString(tok, id)
		b = append(b, `{"token":`...)
		b = appendJSONString(b, s)
		b = append(b, `,"logprob":`...)
		b = appendJSONFloat(b, float64(lp))
		b = append(b, `,"bytes":`...)
		return appendByteArray(b, []byte(s))
	}
	b = one(b, t.ID, t.Logprob)
	b = append(b, `,"top_logprobs":[`...)
	for i, alt := range t.Top {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, alt.ID, alt.Logprob)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendCompletionLogprobs writes the legacy completions logprobs object
// for toks. With nullFirst the first entry (the first prompt token) has a
// null logprob and null top_logprobs. offset is the running text_offset.
func (j *job) appendCompletionLogprobs(b []byte, toks []runtime.Token, nullFirst bool, offset *int) []byte {
	tok := j.st.tok
	b = append(b, `{"text_offset":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(max(*offset, 0)), 10)
		if !tok.IsSpecial(t.ID) {
			*offset += utf8.RuneCount(tok.TokenBytes(t.ID))
		}
	}
	b = append(b, `],"token_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		if i == 0 && nullFirst {
			b = append(b, "null"...)
		} else {
			b = appendJSONFloat(b, float64(t.Logprob))
		}
	}
	b = append(b, `],"tokens":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, tokenString(tok, t.ID))
	}
	b = append(b, `],"top_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		if i == 0 && nullFirst {
			b = append(b, "null"...)
			continue
		}
		// The sampled token is always listed, then the alternatives.
		b = append(b, '{')
		b = appendJSONString(b, tokenString(tok, t.ID))
		b = append(b, ':')
		b = appendJSONFloat(b, float64(t.Logprob))
		seen := map[string]bool{tokenString(tok, t.ID): true}
		for _, alt := range t.Top {
			s := tokenString(tok, alt.ID)
			if seen[s] {
				continue
			}
			seen[s] = true
			b = append(b, ',')
			b = appendJSONString(b, s)
			b = append(b, ':')
			b = appendJSONFloat(b, float64(alt.Logprob))
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendResponse writes the non-streaming response body.
func (j *job) appendResponse(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, j.respID...)
	if j.r.chat {
		b = append(b, `","object":"chat.completion","created":`...)
	} else {
		b = append(b, `","object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, j.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, j.s.cfg.Model)
	b = append(b, `,"choices":[`...)
	for i, q := range j.seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(q.index), 10)
		if j.r.chat {
			b = append(b, ',')
			b = j.appendMessage(b, q)
			b = append(b, `,"logprobs":`...)
			if j.r.logprobs >= 0 {
				b = append(b, `{"content":[`...)
				for k, t := range q.lps {
					if k > 0 {
						b = append(b, ',')
					}
					b = j.appendChatLogprob(b, t)
				}
				b = append(b, "]}"...)
			} else {
				b = append(b, "null"...)
			}
		} else {
			b = append(b, `,"text":`...)
			text := q.text
			if j.r.echo {
				text = append([]byte(j.promptTexts[q.prompt]), q.text...)
			}
			b = appendJSONString(b, text)
			b = append(b, `,"logprobs":`...)
			if j.r.logprobs >= 0 {
				toks := q.lps
				offset := 0
				nullFirst := false
				if plp := q.st.PromptLogprobs(); j.r.echo && len(plp) > 0 {
					toks = append(append([]runtime.Token(nil), plp...), q.lps...)
					nullFirst = true
					offset = -j.promptTextShift(q.prompt)
				}
				b = j.appendCompletionLogprobs(b, toks, nullFirst, &offset)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"finish_reason":`...)
		b = appendJSONString(b, j.finishReason(q))
		b = append(b, `,"stop_reason":`...)
		b = appendStopReason(b, q.stop)
		b = append(b, '}')
	}
	b = append(b, `],"usage":`...)
	b = j.appendUsage(b)
	return append(b, '}')
}

// promptTextShift is how many code points the prompt's tokens spell before
// the echoed prompt text starts: a SentencePiece tokenizer's dummy leading
// space is in the first token's bytes but not in the text, and the
// text_offset values must index the text.
func (j *job) promptTextShift(prompt int) int {
	var spelled []byte
	for _, id := range j.prompts[prompt] {
		if !j.st.tok.IsSpecial(id) {
			spelled = append(spelled, j.st.tok.TokenBytes(id)...)
		}
	}
	text := j.promptTexts[prompt]
	if len(spelled) > len(text) && string(spelled[len(spelled)-len(text):]) == text {
		return utf8.RuneCount(spelled[:len(spelled)-len(text)])
	}
	return 0
}
