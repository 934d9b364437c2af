package serve

import (
	"testing"
)

func TestDecodeCompletion(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		param string // "" means success
		check func(t *testing.T, r *genRequest)
	}{
		{"string prompt defaults", `{"model":"m","prompt":"hi"}`, "", func(t *testing.T, r *genRequest) {
			if r.maxTokens != 16 || r.n != 1 || r.logprobs != -1 || r.sampling.Temperature != 1 || !r.addSpecial || len(r.promptTexts) != 1 {
				t.Errorf("defaults %+v", r)
			}
		}},
		{"string list", `{"prompt":["a","b"],"max_tokens":3}`, "", func(t *testing.T, r *genRequest) {
			if len(r.promptTexts) != 2 || r.maxTokens != 3 {
				t.Errorf("%+v", r)
			}
		}},
		{"token ids", `{"prompt":[1,2,3]}`, "", func(t *testing.T, r *genRequest) {
			if len(r.promptIDs) != 1 || len(r.promptIDs[0]) != 3 {
				t.Errorf("%+v", r.promptIDs)
			}
		}},
		{"token id lists", `{"prompt":[[1],[2,3]]}`, "", func(t *testing.T, r *genRequest) {
			if len(r.promptIDs) != 2 {
				t.Errorf("%+v", r.promptIDs)
			}
		}},
		{"sampling fields", `{"prompt":"x","temperature":0,"top_p":0.5,"top_k":4,"min_p":0.1,"seed":-5,"stop":"\n","stop_token_ids":[7],"n":2,"logprobs":3,"echo":true,"ignore_eos":true,"presence_penalty":1,"frequency_penalty":-1,"repetition_penalty":1.1,"user":"u","stream":true,"stream_options":{"include_usage":true}}`, "", func(t *testing.T, r *genRequest) {
			s := r.sampling
			if s.Temperature != 0 || s.TopP != 0.5 || s.TopK != 4 || s.MinP != float32(0.1) || !s.HasSeed || s.Seed != -5 ||
				len(r.stop) != 1 || r.stopTokenIDs[0] != 7 || r.n != 2 || r.logprobs != 3 || !r.echo || !r.ignoreEOS ||
				s.PresencePenalty != 1 || s.FrequencyPenalty != -1 || s.RepetitionPenalty != float32(1.1) || !r.stream || !r.includeUsage {
				t.Errorf("%+v", r)
			}
		}},
		{"stop list", `{"prompt":"x","stop":["a","b"]}`, "", func(t *testing.T, r *genRequest) {
			if len(r.stop) != 2 {
				t.Errorf("%v", r.stop)
			}
		}},
		{"empty stream_options gives no usage", `{"prompt":"x","stream":true,"stream_options":{}}`, "", func(t *testing.T, r *genRequest) {
			if r.includeUsage {
				t.Error("usage requested")
			}
		}},
		{"malformed", `{"prompt":`, "", nil},
		{"not an object", `[1,2]`, "", nil},
		{"trailing data", `{"prompt":"x"} {}`, "", nil},
		{"empty body", ``, "", nil},
		{"missing prompt", `{"model":"m"}`, "prompt", nil},
		{"empty prompt list", `{"prompt":[]}`, "prompt", nil},
		{"bad prompt type", `{"prompt":5}`, "prompt", nil},
		{"mixed prompt list", `{"prompt":["a",1]}`, "prompt", nil},
		{"max_tokens wrong type", `{"prompt":"x","max_tokens":"10"}`, "max_tokens", nil},
		{"max_tokens negative", `{"prompt":"x","max_tokens":-1}`, "max_tokens", nil},
		{"max_tokens huge", `{"prompt":"x","max_tokens":99999999999}`, "max_tokens", nil},
		{"max_tokens fraction", `{"prompt":"x","max_tokens":1.5}`, "max_tokens", nil},
		{"temperature range", `{"prompt":"x","temperature":3}`, "temperature", nil},
		{"top_p zero", `{"prompt":"x","top_p":0}`, "top_p", nil},
		{"top_k", `{"prompt":"x","top_k":-2}`, "top_k", nil},
		{"min_p", `{"prompt":"x","min_p":1.5}`, "min_p", nil},
		{"n zero", `{"prompt":"x","n":0}`, "n", nil},
		{"logprobs range", `{"prompt":"x","logprobs":21}`, "logprobs", nil},
		{"penalty range", `{"prompt":"x","presence_penalty":3}`, "presence_penalty", nil},
		{"repetition penalty", `{"prompt":"x","repetition_penalty":0}`, "repetition_penalty", nil},
		{"empty stop", `{"prompt":"x","stop":[""]}`, "stop", nil},
		{"stop wrong type", `{"prompt":"x","stop":5}`, "stop", nil},
		{"negative stop id", `{"prompt":"x","stop_token_ids":[-1]}`, "stop_token_ids", nil},
		{"stream_options without stream", `{"prompt":"x","stream_options":{"include_usage":true}}`, "stream_options", nil},
		{"unknown field", `{"prompt":"x","frobnicate":1}`, "frobnicate", nil},
		{"suffix", `{"prompt":"x","suffix":"y"}`, "suffix", nil},
		{"logit_bias", `{"prompt":"x","logit_bias":{"5":1}}`, "logit_bias", nil},
		{"best_of", `{"prompt":"x","best_of":3}`, "best_of", nil},
		{"beam search", `{"prompt":"x","use_beam_search":true}`, "use_beam_search", nil},
		{"min_tokens", `{"prompt":"x","min_tokens":3}`, "min_tokens", nil},
		{"prompt_logprobs", `{"prompt":"x","prompt_logprobs":1}`, "prompt_logprobs", nil},
		{"response_format json", `{"prompt":"x","response_format":{"type":"json_object"}}`, "", func(t *testing.T, r *genRequest) {
			if r.constraint == nil || r.constraint.kind != "json_object" {
				t.Errorf("constraint %+v", r.constraint)
			}
		}},
		{"guided_regex wrong type", `{"prompt":"x","guided_regex":5}`, "guided_regex", nil},
		{"response_format unknown", `{"prompt":"x","response_format":{"type":"xml"}}`, "response_format.type", nil},
		{"skip_special_tokens false", `{"prompt":"x","skip_special_tokens":false}`, "skip_special_tokens", nil},
		{"harmless extras", `{"prompt":"x","user":"u","metadata":{"a":1},"store":false,"priority":1,"response_format":{"type":"text"},"skip_special_tokens":true,"best_of":1}`, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, e := decodeCompletion([]byte(c.body))
			wantErr := c.param != "" || c.check == nil && c.name != "harmless extras"
			if !wantErr {
				if e != nil {
					t.Fatalf("error %v (param %q)", e, e.Param)
				}
				if c.check != nil {
					c.check(t, r)
				}
				return
			}
			if e == nil {
				t.Fatalf("accepted %s", c.body)
			}
			if e.Status != 400 || e.Param != c.param || e.Message == "" {
				t.Errorf("error %+v, want 400 naming %q", e, c.param)
			}
		})
	}
}

func TestDecodeChat(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		param string
		ok    bool
		check func(t *testing.T, r *genRequest)
	}{
		{"basic", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`, "", true, func(t *testing.T, r *genRequest) {
			if r.maxTokens != -1 || len(r.messages) != 2 || r.logprobs != -1 || !r.addGenPrompt || r.addSpecial {
				t.Errorf("%+v", r)
			}
		}},
		{"content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, "", true, func(t *testing.T, r *genRequest) {
			if r.messages[0].Content != "a\nb" {
				t.Errorf("%q", r.messages[0].Content)
			}
		}},
		{"max_completion_tokens", `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":5}`, "", true, func(t *testing.T, r *genRequest) {
			if r.maxTokens != 5 || r.maxTokensArg != "max_completion_tokens" {
				t.Errorf("%+v", r)
			}
		}},
		{"logprobs", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":2}`, "", true, func(t *testing.T, r *genRequest) {
			if r.logprobs != 2 {
				t.Errorf("%d", r.logprobs)
			}
		}},
		{"no messages", `{"messages":[]}`, "messages", false, nil},
		{"bad role", `{"messages":[{"role":"function","content":"x"}]}`, "messages[0].role", false, nil},
		{"tool result without a call", `{"messages":[{"role":"tool","content":"x","tool_call_id":"c1"}]}`, "messages[0].tool_call_id", false, nil},
		{"missing content", `{"messages":[{"role":"user"}]}`, "messages[0].content", false, nil},
		{"image part", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "messages[0].content[0]", false, nil},
		{"top_logprobs without logprobs", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, "top_logprobs", false, nil},
		{"tool without function", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, "tools[0].function", false, nil},
		{"echo", `{"messages":[{"role":"user","content":"x"}],"echo":true}`, "echo", false, nil},
		{"disagreeing limits", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"max_completion_tokens":4}`, "max_tokens", false, nil},
		{"messages wrong type", `{"messages":"hi"}`, "messages", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, e := decodeChat([]byte(c.body))
			if c.ok {
				if e != nil {
					t.Fatalf("error %v", e)
				}
				if c.check != nil {
					c.check(t, r)
				}
				return
			}
			if e == nil {
				t.Fatalf("accepted %s", c.body)
			}
			if e.Status != 400 || e.Param != c.param {
				t.Errorf("error %+v, want 400 naming %q", e, c.param)
			}
		})
	}
}

func FuzzDecodeCompletion(f *testing.F) {
	for _, s := range []string{`{"prompt":"hi","max_tokens":5,"stop":["x"]}`, `{"prompt":[[1,2],[3]],"n":2}`, `{"prompt":[1,2],"logprobs":2,"echo":true}`, `{`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, e := decodeCompletion(body)
		if (r == nil) == (e == nil) {
			t.Fatalf("decode returned request %v and error %v", r, e)
		}
		if e != nil && (e.Status != 400 || e.Message == "") {
			t.Fatalf("error %+v", e)
		}
		if r != nil && (r.n < 1 || r.maxTokens < 0 || len(r.promptTexts)+len(r.promptIDs) == 0) {
			t.Fatalf("invalid request accepted: %+v", r)
		}
	})
}

func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{`{"messages":[{"role":"user","content":"hi"}],"stream":true}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"logprobs":true,"top_logprobs":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, e := decodeChat(body)
		if (r == nil) == (e == nil) {
			t.Fatalf("decode returned request %v and error %v", r, e)
		}
		if r != nil && len(r.messages) == 0 {
			t.Fatal("no messages accepted")
		}
	})
}
