package serve

import (
	"strconv"

	"github.com/ttis-dev/ttis/runtime"
)

// chatFormat is POST /v1/chat/completions' answer.
type chatFormat struct{}

func (chatFormat) idPrefix() string { return "chatcmpl-" }

func (f chatFormat) appendChunks(b []byte, j *job, q *seqState, final bool) []byte {
	return appendOpenAIChunks(b, f, j, q, final)
}

func (f chatFormat) appendDone(b []byte, j *job) []byte { return appendOpenAIDone(b, f, j) }

func (f chatFormat) appendResponse(b []byte, j *job) []byte { return appendOpenAIResponse(b, f, j) }

func (chatFormat) object(chunk bool) string {
	if chunk {
		return "chat.completion.chunk"
	}
	return "chat.completion"
}

// appendOpening writes the role chunk that opens each choice's stream.
func (f chatFormat) appendOpening(b []byte, j *job, q *seqState) []byte {
	b = j.appendChunkHead(b, f, true)
	b = strconv.AppendInt(b, int64(q.index), 10)
	b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	if j.r.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (chatFormat) appendDelta(b []byte, j *job, q *seqState, e *event, last bool) []byte {
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
	if !e.hasTok {
		return append(b, "null"...)
	}
	b = append(b, `{"content":[`...)
	b = j.appendChatLogprob(b, e.tok)
	return append(b, "]}"...)
}

func (chatFormat) appendChoice(b []byte, j *job, q *seqState) []byte {
	b = append(b, ',')
	b = j.appendMessage(b, q)
	b = append(b, `,"logprobs":`...)
	if j.r.logprobs < 0 {
		return append(b, "null"...)
	}
	b = append(b, `{"content":[`...)
	for k, t := range q.lps {
		if k > 0 {
			b = append(b, ',')
		}
		b = j.appendChatLogprob(b, t)
	}
	return append(b, "]}"...)
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
