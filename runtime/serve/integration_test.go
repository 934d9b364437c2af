package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int    `json:"index"`
		Text    string `json:"text"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   any             `json:"stop_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// checkError asserts an OpenAI-shaped error with the given status and param.
func checkError(t *testing.T, code int, body []byte, wantCode int, wantParam string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("status %d, want %d: %s", code, wantCode, body)
	}
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code != wantCode {
		t.Fatalf("not an OpenAI error: %s (%v)", body, err)
	}
	got := ""
	if e.Error.Param != nil {
		got = *e.Error.Param
	}
	if got != wantParam {
		t.Errorf("param %q, want %q (%s)", got, wantParam, e.Error.Message)
	}
}

func TestEndpoints(t *testing.T) {
	u := startUnit(t, 0, "[limits]\nmax_context = 64\nmax_body_bytes = 4096\n")

	code, h, body := u.request("GET", "/health", "", "X-Request-Id", "req-123")
	if code != 200 || h.Get("X-Request-Id") != "req-123" || len(body) != 0 {
		t.Errorf("health %d %q, request id %q", code, body, h.Get("X-Request-Id"))
	}
	_, h, _ = u.request("GET", "/health", "")
	if h.Get("X-Request-Id") == "" {
		t.Error("no generated X-Request-Id")
	}

	var ver map[string]any
	_, _, body = u.request("GET", "/version", "")
	if err := json.Unmarshal(body, &ver); err != nil || ver["simulated"] != true || ver["runtime"] != "sim" || !strings.Contains(fmt.Sprint(ver["engine"]), "sim") {
		t.Errorf("version %s", body)
	}

	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
			Simulated   bool   `json:"simulated"`
		} `json:"data"`
	}
	_, _, body = u.request("GET", "/v1/models", "")
	if err := json.Unmarshal(body, &models); err != nil || models.Object != "list" || len(models.Data) != 1 {
		t.Fatalf("models %s", body)
	}
	if m := models.Data[0]; m.ID != "Llama-3.1-8B-Instruct" || m.OwnedBy != "ttis-sim" || !m.Simulated || m.MaxModelLen != 64 || m.Object != "model" {
		t.Errorf("model card %+v", m)
	}

	code, _, body = u.request("GET", "/v1/models/meta-llama/Llama-3.1-8B-Instruct", "")
	if code != 200 || !strings.Contains(string(body), `"simulated":true`) {
		t.Errorf("models retrieve: %d %s", code, body)
	}
	code, _, body = u.request("GET", "/v1/models/gpt-4", "")
	checkError(t, code, body, 404, "model")

	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	text := "Hello wörld 🙂, the sun"
	u.post("/tokenize", fmt.Sprintf(`{"prompt":%q}`, text), &tok)
	if tok.Count != len(tok.Tokens) || tok.Count < 3 || tok.MaxModelLen != 64 {
		t.Errorf("tokenize %+v", tok)
	}
	var detok struct {
		Prompt string `json:"prompt"`
	}
	ids, _ := json.Marshal(tok.Tokens)
	u.post("/detokenize", fmt.Sprintf(`{"tokens":%s}`, ids), &detok)
	if detok.Prompt != text {
		t.Errorf("detokenize = %q, want %q", detok.Prompt, text)
	}
	var chatTok struct {
		Count int `json:"count"`
	}
	u.post("/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`, &chatTok)
	if chatTok.Count == 0 {
		t.Error("chat tokenize counted nothing")
	}
	var info map[string]any
	code, _, body = u.request("GET", "/tokenizer_info", "")
	if json.Unmarshal(body, &info); code != 200 || info["eos_token"] != "</s>" {
		t.Errorf("tokenizer_info %d %s", code, body)
	}

	_, _, body = u.request("GET", "/metrics", "")
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:time_to_first_token_seconds_bucket",
		"vllm:time_per_output_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", `le="2560"`, `le="7680"`} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %s", name)
		}
	}

	// Bad input.
	code, _, body = u.request("GET", "/nope", "")
	checkError(t, code, body, 404, "")
	code, _, body = u.request("GET", "/v1/completions", "")
	checkError(t, code, body, 405, "")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x","model":"gpt-4"}`)
	checkError(t, code, body, 404, "model")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x"`)
	checkError(t, code, body, 400, "")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x","max_tokens":"3"}`)
	checkError(t, code, body, 400, "max_tokens")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x","max_tokens":-3}`)
	checkError(t, code, body, 400, "max_tokens")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x","max_tokens":100}`)
	checkError(t, code, body, 400, "max_tokens")
	code, _, body = u.request("POST", "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, strings.Repeat("the ", 80)))
	checkError(t, code, body, 400, "prompt")
	code, _, body = u.request("POST", "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":%q}]}`, strings.Repeat("the ", 80)))
	checkError(t, code, body, 400, "messages")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":[99999999]}`)
	checkError(t, code, body, 400, "prompt")
	code, _, body = u.request("POST", "/v1/completions", `{"prompt":"x","n":2,"best_of":3}`)
	checkError(t, code, body, 400, "best_of")
	code, _, body = u.request("POST", "/v1/completions", fmt.Sprintf(`{"prompt":%q}`, strings.Repeat("a", 5000)))
	checkError(t, code, body, 413, "")
	// The process survived all of it.
	if code, _, _ := u.request("GET", "/health", ""); code != 200 {
		t.Errorf("health %d after bad input", code)
	}
}

func TestCompletions(t *testing.T) {
	u := startUnit(t, 0, "")
	var tok struct {
		Count int `json:"count"`
	}
	prompt := "The water is cold and the"
	u.post("/tokenize", fmt.Sprintf(`{"prompt":%q}`, prompt), &tok)

	var a, b completion
	req := fmt.Sprintf(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":%q,"max_tokens":20,"seed":5,"ignore_eos":true}`, prompt)
	u.post("/v1/completions", req, &a)
	u.post("/v1/completions", req, &b)
	if a.Object != "text_completion" || !strings.HasPrefix(a.ID, "cmpl-") || len(a.Choices) != 1 {
		t.Fatalf("response %+v", a)
	}
	if a.Choices[0].Text != b.Choices[0].Text || a.Choices[0].Text == "" {
		t.Errorf("seeded outputs differ or are empty: %q vs %q", a.Choices[0].Text, b.Choices[0].Text)
	}
	if *a.Usage != (usage{PromptTokens: tok.Count, CompletionTokens: 20, TotalTokens: tok.Count + 20}) || *a.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v finish %v", a.Usage, *a.Choices[0].FinishReason)
	}
	// The completion tokenizes back to exactly max_tokens tokens.
	var gen struct {
		Count int `json:"count"`
	}
	u.post("/tokenize", fmt.Sprintf(`{"prompt":%q,"add_special_tokens":false}`, a.Choices[0].Text), &gen)
	if gen.Count > 20 {
		t.Errorf("20 tokens of text re-tokenize to %d", gen.Count)
	}

	// Several prompts and n: choices indexed prompt-major.
	var multi completion
	u.post("/v1/completions", `{"prompt":["the sun","a dog","x y"],"n":2,"max_tokens":3,"ignore_eos":true,"temperature":0.8,"seed":1}`, &multi)
	if len(multi.Choices) != 6 || multi.Usage.CompletionTokens != 18 {
		t.Fatalf("multi: %d choices, usage %+v", len(multi.Choices), multi.Usage)
	}
	for i, c := range multi.Choices {
		if c.Index != i {
			t.Errorf("choice %d has index %d", i, c.Index)
		}
	}
	if multi.Choices[0].Text == multi.Choices[1].Text && multi.Choices[2].Text == multi.Choices[3].Text {
		t.Error("n=2 choices are identical under sampling")
	}
	var idLists completion
	u.post("/v1/completions", `{"prompt":[[0,400,401],[0,402]],"max_tokens":2,"ignore_eos":true}`, &idLists)
	if len(idLists.Choices) != 2 || idLists.Usage.PromptTokens != 5 {
		t.Errorf("token-id prompts: %+v", idLists)
	}

	// echo + logprobs + max_tokens=0: prompt log-likelihood in OpenAI's
	// legacy shape.
	var ll struct {
		Choices []struct {
			Text     string `json:"text"`
			Logprobs struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []*float64           `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			} `json:"logprobs"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	u.post("/v1/completions", fmt.Sprintf(`{"prompt":%q,"echo":true,"logprobs":2,"max_tokens":0}`, prompt), &ll)
	c := ll.Choices[0]
	lp := c.Logprobs
	if c.Text != prompt || len(lp.Tokens) != tok.Count || len(lp.TokenLogprobs) != tok.Count || len(lp.TopLogprobs) != tok.Count || len(lp.TextOffset) != tok.Count {
		t.Fatalf("echo logprobs: text %q, %d tokens (want %d): %+v", c.Text, len(lp.Tokens), tok.Count, lp)
	}
	if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
		t.Error("the first prompt token has a logprob")
	}
	distinct := map[float64]bool{}
	for i := 1; i < tok.Count; i++ {
		if lp.TokenLogprobs[i] == nil || *lp.TokenLogprobs[i] >= 0 || len(lp.TopLogprobs[i]) < 2 {
			t.Errorf("prompt token %d: logprob %v top %v", i, lp.TokenLogprobs[i], lp.TopLogprobs[i])
			continue
		}
		distinct[*lp.TokenLogprobs[i]] = true
	}
	if len(distinct) < 2 {
		t.Error("prompt logprobs are constant")
	}
	if strings.Join(lp.Tokens, "") != "<s>"+prompt || lp.TextOffset[len(lp.TextOffset)-1] >= len(prompt) {
		t.Errorf("tokens %q offsets %v", lp.Tokens, lp.TextOffset)
	}
	if ll.Usage.CompletionTokens != 0 || c.FinishReason != "length" {
		t.Errorf("max_tokens=0: usage %+v finish %s", ll.Usage, c.FinishReason)
	}

	// Chat, non-streaming, with logprobs in the chat shape.
	var chat struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					Token       string  `json:"token"`
					Logprob     float64 `json:"logprob"`
					Bytes       []int   `json:"bytes"`
					TopLogprobs []struct {
						Token   string  `json:"token"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	u.post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hello"}],"max_completion_tokens":6,"ignore_eos":true,"logprobs":true,"top_logprobs":3,"temperature":0}`, &chat)
	ch := chat.Choices[0]
	if chat.Object != "chat.completion" || ch.Message.Role != "assistant" || ch.Message.Content == "" || chat.Usage.CompletionTokens != 6 {
		t.Fatalf("chat %+v", chat)
	}
	var joined string
	for _, e := range ch.Logprobs.Content {
		joined += e.Token
		if len(e.TopLogprobs) != 3 || e.Logprob >= 0 || len(e.Bytes) != len(e.Token) {
			t.Errorf("chat logprob entry %+v", e)
		}
		if e.Token != e.TopLogprobs[0].Token {
			t.Errorf("greedy token %q is not the top alternative %q", e.Token, e.TopLogprobs[0].Token)
		}
	}
	if joined != ch.Message.Content || len(ch.Logprobs.Content) != 6 {
		t.Errorf("logprob tokens %q do not spell the content %q", joined, ch.Message.Content)
	}
}

// streamText joins the text of completion or chat chunks and checks the
// stream's structure.
func streamText(t *testing.T, events []string, chat, withUsage bool) (map[int]string, map[int]string, *usage) {
	t.Helper()
	if len(events) < 2 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	texts, finish := map[int]string{}, map[int]string{}
	var u *usage
	roleSeen := map[int]bool{}
	for i, e := range events[:len(events)-1] {
		var c completion
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, e, err)
		}
		if len(c.Choices) == 0 {
			if !withUsage || c.Usage == nil || i != len(events)-2 {
				t.Fatalf("unexpected choices-less event %q", e)
			}
			u = c.Usage
			continue
		}
		if withUsage && !strings.Contains(e, `"usage":null`) {
			t.Errorf("chunk without usage:null while include_usage: %s", e)
		}
		ch := c.Choices[0]
		if _, done := finish[ch.Index]; done {
			t.Errorf("chunk after finish for choice %d", ch.Index)
		}
		if chat {
			if c.Object != "chat.completion.chunk" || ch.Delta == nil {
				t.Fatalf("chat chunk %s", e)
			}
			if !roleSeen[ch.Index] {
				if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" {
					t.Fatalf("first chunk of choice %d lacks the role: %s", ch.Index, e)
				}
				roleSeen[ch.Index] = true
			}
			if ch.Delta.Content != nil {
				texts[ch.Index] += *ch.Delta.Content
			}
		} else {
			if c.Object != "text_completion" {
				t.Fatalf("completion chunk %s", e)
			}
			texts[ch.Index] += ch.Text
		}
		if ch.FinishReason != nil {
			finish[ch.Index] = *ch.FinishReason
		}
	}
	if withUsage && u == nil {
		t.Error("no usage chunk")
	}
	return texts, finish, u
}

func TestStreaming(t *testing.T) {
	u := startUnit(t, 0, "")
	body := `{"prompt":"the sun","max_tokens":12,"seed":9,"temperature":0.7,"ignore_eos":true%s}`
	var plain completion
	u.post("/v1/completions", fmt.Sprintf(body, ""), &plain)
	events := u.stream("/v1/completions", fmt.Sprintf(body, `,"stream":true,"stream_options":{"include_usage":true}`))
	texts, finish, us := streamText(t, events, false, true)
	if texts[0] != plain.Choices[0].Text || finish[0] != "length" {
		t.Errorf("streamed %q (%s), non-streamed %q", texts[0], finish[0], plain.Choices[0].Text)
	}
	if *us != *plain.Usage {
		t.Errorf("stream usage %+v, want %+v", us, plain.Usage)
	}
	// Without include_usage there is no usage chunk and no usage field.
	events = u.stream("/v1/completions", fmt.Sprintf(body, `,"stream":true`))
	for _, e := range events {
		if strings.Contains(e, "usage") {
			t.Fatalf("usage without include_usage: %s", e)
		}
	}
	// Chat, n=2.
	events = u.stream("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"n":2,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":1,"seed":3}`)
	texts, finish, us = streamText(t, events, true, true)
	if len(texts) != 2 || finish[0] != "length" || finish[1] != "length" || us.CompletionTokens != 10 {
		t.Errorf("chat n=2: texts %v finish %v usage %+v", texts, finish, us)
	}
}

func TestStopStrings(t *testing.T) {
	u := startUnit(t, 0, "")
	var g completion
	u.post("/v1/completions", `{"prompt":"the dog","max_tokens":30,"temperature":0}`, &g)
	full := g.Choices[0].Text
	words := strings.Fields(full)
	if len(words) < 6 {
		t.Fatalf("greedy text too short: %q", full)
	}
	stop := words[4] + " " + words[5][:1] // spans two tokens, ends mid-token
	cut := strings.Index(full, stop)
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"prompt":"the dog","max_tokens":30,"temperature":0,"stop":["zzz",%q],"stream":%v}`, stop, stream)
		var text, finish string
		var reason any
		if stream {
			events := u.stream("/v1/completions", body)
			texts, fin, _ := streamText(t, events, false, false)
			text, finish = texts[0], fin[0]
			var last completion
			_ = json.Unmarshal([]byte(events[len(events)-2]), &last)
			reason = last.Choices[0].StopReason
		} else {
			var c completion
			u.post("/v1/completions", body, &c)
			text, finish, reason = c.Choices[0].Text, *c.Choices[0].FinishReason, c.Choices[0].StopReason
		}
		if text != full[:cut] || finish != "stop" || reason != stop {
			t.Errorf("stream=%v: text %q finish %s reason %v; want %q, stop, %q", stream, text, finish, reason, full[:cut], stop)
		}
	}
	// include_stop_str_in_output keeps it.
	var c completion
	u.post("/v1/completions", fmt.Sprintf(`{"prompt":"the dog","max_tokens":30,"temperature":0,"stop":%q,"include_stop_str_in_output":true}`, stop), &c)
	if c.Choices[0].Text != full[:cut]+stop {
		t.Errorf("include_stop_str_in_output: %q", c.Choices[0].Text)
	}
	// A stop token id ends the sequence without its text.
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	u.post("/tokenize", fmt.Sprintf(`{"prompt":%q,"add_special_tokens":false}`, " "+words[3]), &tok)
	u.post("/v1/completions", fmt.Sprintf(`{"prompt":"the dog","max_tokens":30,"temperature":0,"stop_token_ids":[%d]}`, tok.Tokens[0]), &c)
	if want := strings.Join(words[:3], " "); strings.TrimSpace(c.Choices[0].Text) != want || *c.Choices[0].FinishReason != "stop" || c.Choices[0].StopReason != float64(tok.Tokens[0]) {
		t.Errorf("stop token: %q %v %v, want %q", c.Choices[0].Text, *c.Choices[0].FinishReason, c.Choices[0].StopReason, want)
	}
}

func writeSecret(t *testing.T, s string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(s+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuth(t *testing.T) {
	keyUnit := startUnit(t, 0, fmt.Sprintf("[auth]\nmode = \"api-key\"\nsecret_file = %q\n", writeSecret(t, "k-123")))
	secret := "jwt-secret-value"
	jwtUnit := startUnit(t, 0, fmt.Sprintf("[auth]\nmode = \"jwt\"\nsecret_file = %q\n", writeSecret(t, secret)))
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := jwt.MapClaims{"team_id": "tenstorrent", "token_id": "debug-test", "exp": time.Now().Add(time.Hour).Unix()}
	noExpiry := jwt.MapClaims{"team_id": "tenstorrent", "token_id": "debug-test"}
	expired := jwt.MapClaims{"team_id": "t", "token_id": "i", "exp": time.Now().Add(-time.Hour).Unix()}
	head := func(alg string) string {
		h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
		p, _ := json.Marshal(claims)
		return b64(h) + "." + b64(p)
	}
	rsHead := head("RS256")
	rsSig, _ := jwt.SigningMethodHS256.Sign(rsHead, []byte(secret))
	cases := []struct {
		name string
		u    *unit
		auth string
		ok   bool
	}{
		{"key missing", keyUnit, "", false},
		{"key wrong", keyUnit, "Bearer nope", false},
		{"key right", keyUnit, "Bearer k-123", true},
		{"jwt missing", jwtUnit, "", false},
		{"jwt good", jwtUnit, "Bearer " + sign(jwt.SigningMethodHS256, []byte(secret), claims), true},
		{"jwt wrong secret", jwtUnit, "Bearer " + sign(jwt.SigningMethodHS256, []byte("x"), claims), false},
		{"jwt without exp", jwtUnit, "Bearer " + sign(jwt.SigningMethodHS256, []byte(secret), noExpiry), false},
		{"jwt expired", jwtUnit, "Bearer " + sign(jwt.SigningMethodHS256, []byte(secret), expired), false},
		{"jwt alg none", jwtUnit, "Bearer " + head("none") + ".", false},
		{"jwt HS512", jwtUnit, "Bearer " + sign(jwt.SigningMethodHS512, []byte(secret), claims), false},
		{"jwt RS256 header", jwtUnit, "Bearer " + rsHead + "." + b64(rsSig), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/v1/completions", "/v1/models", "/tokenize"} {
				method, body := "POST", `{"prompt":"hi","max_tokens":1}`
				switch path {
				case "/v1/models":
					method, body = "GET", ""
				case "/tokenize":
					body = `{"prompt":"hi"}`
				}
				code, _, b := c.u.request(method, path, body, "Authorization", c.auth)
				if c.ok && code != 200 {
					t.Errorf("%s: %d %s", path, code, b)
				}
				if !c.ok {
					checkError(t, code, b, 401, "")
				}
			}
		})
	}
	// Health, version and metrics stay open.
	for _, p := range []string{"/health", "/version", "/metrics"} {
		if code, _, _ := jwtUnit.request("GET", p, ""); code != 200 {
			t.Errorf("%s needs auth: %d", p, code)
		}
	}
}

func b64(b []byte) string {
	return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(base64Std(b)), "=")
}

func TestQueueFullAndDisconnect(t *testing.T) {
	// Real-time sim: ~21 tokens/s, so a 2000-token stream runs far longer
	// than the test.
	u := startUnit(t, 1, "[limits]\nmax_concurrency = 1\nmax_queue = 1\n")
	long := `{"prompt":"the","max_tokens":2000,"ignore_eos":true,"stream":true}`
	open := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(u.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(long), long)
		return conn, bufio.NewReader(conn)
	}
	first, r1 := open()
	defer first.Close()
	// Read until the first token event arrives.
	for range 100 {
		line, err := r1.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}
	u.waitMetric("vllm:num_requests_running", 1, 5*time.Second)
	second, _ := open()
	defer second.Close()
	u.waitMetric("vllm:num_requests_waiting", 1, 5*time.Second)

	code, h, body := u.request("POST", "/v1/completions", `{"prompt":"x","max_tokens":1}`)
	checkError(t, code, body, 429, "")
	if h.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}

	// The first client goes away: its slot passes to the waiting one.
	first.Close()
	u.waitMetric("vllm:num_requests_waiting", 0, 5*time.Second)
	u.waitMetric("vllm:num_requests_running", 1, 5*time.Second)
	second.Close()
	u.waitMetric("vllm:num_requests_running", 0, 5*time.Second)
	if aborted := u.metric(`vllm:request_success_total{model_name="Llama-3.1-8B-Instruct",engine="0",finished_reason="abort"}`); aborted != 2 {
		t.Errorf("aborted requests = %v, want 2", aborted)
	}
}

func TestSIGTERMDrain(t *testing.T) {
	// Grace = max(stop_timeout-5s, stop_timeout/2, 1s) = 1.5s.
	u := startUnit(t, 1, "[restart]\nstop_timeout = \"3s\"\n")
	type result struct {
		events []string
		err    error
	}
	run := func(maxTokens int) chan result {
		ch := make(chan result, 1)
		go func() {
			resp, err := http.Post(u.url+"/v1/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"prompt":"the","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)))
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			var events []string
			for _, e := range strings.Split(string(b), "\n\n") {
				if strings.HasPrefix(e, "data: ") {
					events = append(events, strings.TrimPrefix(e, "data: "))
				}
			}
			ch <- result{events, err}
		}()
		return ch
	}
	short := run(15)   // ~0.7 s: finishes within the grace period
	long := run(10000) // minutes: cancelled at the end of the grace period
	u.waitMetric("vllm:num_requests_running", 2, 5*time.Second)
	start := time.Now()
	if err := u.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := <-short
		if r.err != nil {
			t.Errorf("short stream: %v", r.err)
			return
		}
		texts, finish, _ := streamText(t, r.events, false, false)
		if finish[0] != "length" || texts[0] == "" {
			t.Errorf("short stream did not complete: %q", r.events)
		}
	}()
	r := <-long
	wg.Wait()
	if r.err != nil {
		t.Fatalf("long stream: %v", r.err)
	}
	if len(r.events) < 2 || r.events[len(r.events)-1] != "[DONE]" || !strings.Contains(r.events[len(r.events)-2], `"finish_reason":"abort"`) {
		t.Errorf("long stream was not cancelled cleanly: %q", r.events[max(0, len(r.events)-2):])
	}
	select {
	case err := <-u.done:
		if err != nil {
			t.Errorf("ttisd serve exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ttisd serve did not exit after SIGTERM")
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("drain took %v", d)
	}
}
