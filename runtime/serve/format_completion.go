package serve

import (
	"strconv"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/runtime"
)

// completionFormat is POST /v1/completions' answer.
type completionFormat struct{}

func (completionFormat) idPrefix() string { return "cmpl-" }

func (f completionFormat) appendChunks(b []byte, j *job, q *seqState, final bool) []byte {
	return appendOpenAIChunks(b, f, j, q, final)
}

func (f completionFormat) appendDone(b []byte, j *job) []byte { return appendOpenAIDone(b, f, j) }

func (f completionFormat) appendResponse(b []byte, j *job) []byte {
	return appendOpenAIResponse(b, f, j)
}

func (completionFormat) object(bool) string { return "text_completion" }

func (completionFormat) appendOpening(b []byte, _ *job, _ *seqState) []byte { return b }

func (completionFormat) appendDelta(b []byte, j *job, q *seqState, e *event, _ bool) []byte {
	b = append(b, `,"text":`...)
	b = appendJSONString(b, e.text)
	b = append(b, `,"logprobs":`...)
	if !e.hasTok {
		return append(b, "null"...)
	}
	return j.appendCompletionLogprobs(b, []runtime.Token{e.tok}, false, &q.offset)
}

func (completionFormat) appendChoice(b []byte, j *job, q *seqState) []byte {
	b = append(b, `,"text":`...)
	text := q.text
	if j.r.echo {
		text = append([]byte(j.promptTexts[q.prompt]), q.text...)
	}
	b = appendJSONString(b, text)
	b = append(b, `,"logprobs":`...)
	if j.r.logprobs < 0 {
		return append(b, "null"...)
	}
	toks := q.lps
	offset := 0
	nullFirst := false
	if plp := q.st.PromptLogprobs(); j.r.echo && len(plp) > 0 {
		toks = append(append([]runtime.Token(nil), plp...), q.lps...)
		nullFirst = true
		offset = -j.promptTextShift(q.prompt)
	}
	return j.appendCompletionLogprobs(b, toks, nullFirst, &offset)
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
