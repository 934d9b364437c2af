package serve

import (
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// The generation routes' handler and the planning of their jobs: a
// request is decoded, judged and admitted before its prompts are
// tokenized (admission before work, admit.go); the job's life from there
// is in job.go, its stream in sse.go and its output in format.go.

// generate serves a generation route: decode reads the route's body and
// f writes its answer. Admission comes before work (admit.go): the body
// was admitted to the reading budget by the preamble; here the prompts
// are judged by their length, the request takes its slots or queue
// places, and only then are its prompts tokenized, after which its body
// and prompt texts are let go.
func (s *Server) generate(c *apiCall, decode func([]byte) (*genRequest, *apiError), f format) {
	ctx, st := c.ctx, c.be.text
	r, e := decode(ctx.PostBody())
	if e == nil {
		e = s.checkModel(st, r.model)
	}
	if e == nil && r.echo && r.stream {
		e = badRequest("echo", "echo is not supported with stream=true")
	}
	var j *job
	if e == nil {
		j, e = s.newJob(st, r, f, c.id, c.arrival)
	}
	if e != nil {
		writeError(ctx, e)
		return
	}
	if !j.admit() {
		s.refuseBusy(ctx, j.slots.lv)
		return
	}
	if e := j.tokenize(); e != nil {
		j.end()
		writeError(ctx, e)
		return
	}
	s.doneReading(ctx)
	if r.stream {
		s.hijack(ctx, j.stream)
		return
	}
	defer j.end()
	if err := j.waitSlots(nil); err != nil {
		writeError(ctx, j.ctxError(err))
		return
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
	ctx.SetBody(f.appendResponse(make([]byte, 0, 1024), j))
}

// doneReading ends a tokenized request's hold on the reading budget and
// lets its body go: what it still holds (token ids) is bounded by its
// slots and the context window.
func (s *Server) doneReading(ctx *fasthttp.RequestCtx) {
	s.endRead(ctx)
	ctx.Request.ResetBody()
}

// admit claims the job's slots, or places in the wait queue; it reports
// false when the queue is full. It starts the job's context, bounded by
// limits.request_timeout from the request's arrival. Both limits are the
// live ones (a SIGHUP may change them while the server runs), kept in
// j.slots for messages.
func (j *job) admit() bool {
	c, ok := j.s.claimSlots(int64(len(j.seqs)))
	j.slots = c
	if !ok {
		return false
	}
	j.ctx, j.cancel = j.s.requestContext(j.arrival, c.lv.RequestTimeout)
	return true
}

// newJob plans a job without tokenizing: it renders the chat template,
// judges every prompt against the context window by its length (a text
// prompt by its bytes, see minTokens; a token-id prompt exactly), and
// lays out one sequence per (prompt, n). tokenize finishes it once the
// job holds its slots or queue places.
func (s *Server) newJob(st *engineState, r *genRequest, f format, reqID string, arrival time.Time) (*job, *apiError) {
	j := &job{s: s, st: st, r: r, f: f, id: reqID, created: arrival.Unix(), arrival: arrival, respID: f.idPrefix() + newID()}
	if r.chat {
		text, syntax, e := chatPrompt(st, r)
		if e != nil {
			return nil, e
		}
		j.toolSyntax = syntax
		j.texts = []string{text}
		// The rendered prompt holds the conversation from here on.
		r.messages = nil
	} else {
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
