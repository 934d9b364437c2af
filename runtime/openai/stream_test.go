package openai

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Chunk
	}{
		{"completion token", `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" hello","logprobs":null,"finish_reason":null}],"usage":null}`,
			Chunk{HasChoices: true, Text: []byte(" hello"), HasText: true}},
		{"chat role chunk", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			Chunk{HasChoices: true, Text: []byte{}, HasText: true, RoleOnly: true, hasRole: true}},
		{"chat content", `{"choices":[{"delta":{"content":"a\"b\\n\u00e9\ud83d\ude00"}}]}`,
			Chunk{HasChoices: true, Text: []byte("a\"b\\n\u00e9\U0001F600"), HasText: true}},
		{"finish with usage", `{"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`,
			Chunk{HasChoices: true, Text: []byte{}, HasText: true, FinishReason: "length", HasUsage: true, PromptTokens: 12, CompletionTokens: 7}},
		{"usage only", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			Chunk{Text: []byte{}, HasUsage: true, PromptTokens: 3, CompletionTokens: 4}},
		{"error object", `{"error":{"message":"model not found","type":"invalid_request_error","code":404}}`,
			Chunk{Text: []byte{}, Error: "model not found"}},
		{"reasoning", `{"choices":[{"delta":{"reasoning_content":"think"}}]}`,
			Chunk{HasChoices: true, Text: []byte("think"), HasText: true}},
		{"nested unknowns", `{"x":[1,{"y":[true,false,null,-1.5e3]}],"choices":[{"logprobs":{"tokens":["a"]},"text":"z"}]}`,
			Chunk{HasChoices: true, Text: []byte("z"), HasText: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			if err := ParseChunk([]byte(tc.in), &c); err != nil {
				t.Fatalf("ParseChunk: %v", err)
			}
			if string(c.Text) != string(tc.want.Text) || c.HasChoices != tc.want.HasChoices || c.HasText != tc.want.HasText ||
				c.RoleOnly != tc.want.RoleOnly || c.FinishReason != tc.want.FinishReason || c.HasUsage != tc.want.HasUsage ||
				c.PromptTokens != tc.want.PromptTokens || c.CompletionTokens != tc.want.CompletionTokens || c.Error != tc.want.Error {
				t.Errorf("got %+v (text %q), want %+v (text %q)", c, c.Text, tc.want, tc.want.Text)
			}
		})
	}
}

func TestParseChunkRejects(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{`, `{"choices":[{"text":"a"}]`, `{"a":1 "b":2}`, `{,"a":1}`, `{"a":01}`,
		`{"usage":{"completion_tokens":-1}}`, `{"usage":{"completion_tokens":1.5}}`, `{"a":"\x"}`,
		`{"a":tru}`, `{"a":1}x`, "{\"a\":\"\x01\"}", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		var c Chunk
		if err := ParseChunk([]byte(in), &c); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseChunk(%q) = %v, want a syntax error", in, err)
		}
	}
}

func TestReader(t *testing.T) {
	in := ": ping\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: error\ndata: line1\ndata: line2\nid: 7\n\ndata:nospace\n\n\n\ndata: [DONE]\n\n"
	r := NewReader(strings.NewReader(in), 16)
	var got []string
	for {
		d, ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, string(ev)+"|"+string(d))
	}
	want := []string{`|{"a":1}`, "error|line1\nline2", "|nospace", "|[DONE]"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestReaderTruncated(t *testing.T) {
	for _, in := range []string{"data: {\"a\":1}\n", "data: {\"a\":1}", "data: x\n\ndata: partial"} {
		r := NewReader(strings.NewReader(in), 4096)
		var err error
		for range 10 {
			if _, _, err = r.Next(); err != nil {
				break
			}
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: err %v, want ErrUnexpectedEOF", in, err)
		}
	}
}

func TestReaderEventTooLarge(t *testing.T) {
	r := NewReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 16)
	r.maxEvent = 50
	if _, _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err %v, want ErrEventTooLarge", err)
	}
}

// mirror decodes the same fields with encoding/json for the fuzz oracle.
func mirror(b []byte) (Chunk, bool) {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return Chunk{}, false
	}
	c := Chunk{Text: []byte{}}
	if ch, ok := m["choices"].([]any); ok && len(ch) > 0 {
		c.HasChoices = true
		if first, ok := ch[0].(map[string]any); ok {
			if s, ok := first["text"].(string); ok {
				c.HasText = true
				c.Text = append(c.Text, s...)
			}
			if s, ok := first["finish_reason"].(string); ok {
				c.FinishReason = s
			}
		}
	}
	if u, ok := m["usage"].(map[string]any); ok {
		c.HasUsage = true
		if f, ok := u["completion_tokens"].(float64); ok {
			c.CompletionTokens = int(f)
		}
		if f, ok := u["prompt_tokens"].(float64); ok {
			c.PromptTokens = int(f)
		}
	}
	return c, true
}

func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"text":" hello","finish_reason":null}],"usage":null}`,
		`{"choices":[{"text":"a\u00e9\"","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"choices":[],"usage":{"completion_tokens":4}}`,
		`{"error":{"message":"bad"}}`,
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Chunk
		err := ParseChunk(b, &c)
		if err != nil {
			return
		}
		if !utf8.Valid(c.Text) {
			t.Fatalf("text %q is not valid UTF-8", c.Text)
		}
		// Compare against encoding/json when the input is plain enough for
		// both to agree: valid JSON, valid UTF-8, counts that are integers,
		// no "delta" (the mirror only follows completions).
		want, ok := mirror(b)
		if !ok || !utf8.Valid(b) || strings.Contains(string(b), "delta") || strings.Contains(string(b), "message") {
			return
		}
		if string(c.Text) != string(want.Text) || c.HasChoices != want.HasChoices || c.HasText != want.HasText ||
			c.FinishReason != want.FinishReason || c.HasUsage != want.HasUsage ||
			c.CompletionTokens != want.CompletionTokens || c.PromptTokens != want.PromptTokens {
			t.Fatalf("ParseChunk(%q) = %+v (text %q), encoding/json says %+v (text %q)", b, c, c.Text, want, want.Text)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n: ping\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(strings.NewReader(string(b)), 16)
		for range len(b) + 2 {
			d, _, err := r.Next()
			if err != nil {
				return
			}
			if len(d) > len(b) {
				t.Fatalf("event longer than input")
			}
		}
		t.Fatalf("reader did not finish within %d events", len(b)+2)
	})
}
