package serve

import (
	"strconv"
)

// format writes a generation route's answer. A route that reuses the
// generation path with another API's shape (an OpenAI /v1/responses, say)
// brings its own format; the job's helpers (finishReason, appendUsage,
// the logprob writers) are shared.
type format interface {
	// idPrefix starts the response's id ("cmpl-", "chatcmpl-").
	idPrefix() string
	// appendChunks writes q's pending events (q.events) as stream
	// events; with final, the last carries the end of q.
	appendChunks(b []byte, j *job, q *seqState, final bool) []byte
	// appendDone ends a stream that ran to its end.
	appendDone(b []byte, j *job) []byte
	// appendResponse writes the whole answer of a request that did not
	// stream (every sequence has ended).
	appendResponse(b []byte, j *job) []byte
}

// The OpenAI completions and chat completions formats share their frame:
// a chunk per event, "data: {id, object, created, model, choices:
// [{index, …, finish_reason, stop_reason}]}", and a response of the same
// shape with usage. openaiAPI is what differs.
type openaiAPI interface {
	// object names a chunk or a response.
	object(chunk bool) string
	// appendOpening writes what opens q's stream (nothing, or chat's role
	// chunk), once.
	appendOpening(b []byte, j *job, q *seqState) []byte
	// appendDelta writes an event's part of a chunk's choice (after its
	// index, before its finish_reason); last is the final one.
	appendDelta(b []byte, j *job, q *seqState, e *event, last bool) []byte
	// appendChoice writes q's part of the response's choice.
	appendChoice(b []byte, j *job, q *seqState) []byte
}

// appendChunkHead starts an SSE event up to the choices array's opening
// (with withChoice, up to and including the choice's "index":). The head is
// the same for every chunk of a job, so it is built once.
func (j *job) appendChunkHead(b []byte, api openaiAPI, withChoice bool) []byte {
	if j.head == nil {
		j.head = append(j.head, `data: {"id":"`...)
		j.head = append(j.head, j.respID...)
		j.head = append(j.head, `","object":"`...)
		j.head = append(j.head, api.object(true)...)
		j.head = append(j.head, `","created":`...)
		j.head = strconv.AppendInt(j.head, j.created, 10)
		j.head = append(j.head, `,"model":`...)
		j.head = appendJSONString(j.head, j.s.cfg.Model)
		j.head = append(j.head, `,"choices":`...)
	}
	b = append(b, j.head...)
	if withChoice {
		b = append(b, `[{"index":`...)
	}
	return b
}

func (j *job) appendChunkTail(b []byte) []byte {
	b = append(b, "}]"...)
	if j.r.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

// appendOpenAIChunks writes one chunk per event; the last carries the
// finish reason when final.
func appendOpenAIChunks(b []byte, api openaiAPI, j *job, q *seqState, final bool) []byte {
	if !q.started {
		q.started = true
		b = api.appendOpening(b, j, q)
	}
	evs := q.events
	if final && len(evs) == 0 {
		evs = []event{{}}
	}
	for i := range evs {
		last := final && i == len(evs)-1
		b = j.appendChunkHead(b, api, true)
		b = strconv.AppendInt(b, int64(q.index), 10)
		b = api.appendDelta(b, j, q, &evs[i], last)
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

// appendOpenAIDone writes the usage chunk (stream_options.include_usage)
// and [DONE].
func appendOpenAIDone(b []byte, api openaiAPI, j *job) []byte {
	if j.r.includeUsage {
		b = j.appendChunkHead(b, api, false)
		b = append(b, `[],"usage":`...)
		b = j.appendUsage(b)
		b = append(b, "}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// appendOpenAIResponse writes the non-streaming response body.
func appendOpenAIResponse(b []byte, api openaiAPI, j *job) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, j.respID...)
	b = append(b, `","object":"`...)
	b = append(b, api.object(false)...)
	b = append(b, `","created":`...)
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
		b = api.appendChoice(b, j, q)
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

func appendStopReason(b []byte, v any) []byte {
	switch s := v.(type) {
	case string:
		return appendJSONString(b, s)
	case int:
		return strconv.AppendInt(b, int64(s), 10)
	}
	return append(b, "null"...)
}

// appendUsage writes the usage object.
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
