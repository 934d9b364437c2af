package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// startServer serves eng in-process on a loopback port until the test
// ends and returns the base URL.
func startServer(t testing.TB, cfg Config, eng runtime.Engine) string {
	t.Helper()
	_, addr := serveEngine(t, cfg, eng)
	return "http://" + addr
}

// serveEngine serves eng in-process on a loopback port until the test
// ends (then shuts the server down) and returns the server and address.
func serveEngine(t testing.TB, cfg Config, eng runtime.Engine) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetEngine(eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
	})
	return s, ln.Addr().String()
}

// postJSON posts body and returns the status and decoded answer.
func postJSON(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("POST %s: %d %s: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, v
}

// chatContent is the first choice's message content of a chat answer.
func chatContent(t testing.TB, v map[string]any) string {
	t.Helper()
	choices, _ := v["choices"].([]any)
	if len(choices) == 0 {
		t.Fatalf("no choices in %v", v)
	}
	msg, _ := choices[0].(map[string]any)["message"].(map[string]any)
	s, _ := msg["content"].(string)
	return s
}

// streamEvents posts a streaming request and returns its data events.
func streamEvents(t testing.TB, url, body string) []map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestStructuredOutputFields(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newSimF(t))
	schema := `{"type":"object","properties":{"city":{"type":"string","maxLength":16},"temp":{"type":"number","minimum":-40,"maximum":50},"tags":{"type":"array","items":{"enum":["sun","rain"]},"maxItems":3}},"required":["city","temp","tags"],"additionalProperties":false}`
	checkSchema := func(s string) bool {
		var v struct {
			City *string
			Temp *float64
			Tags []string
		}
		d := json.NewDecoder(strings.NewReader(s))
		d.DisallowUnknownFields()
		return d.Decode(&v) == nil && v.City != nil && len(*v.City) <= 64 && v.Temp != nil && *v.Temp >= -40 && *v.Temp <= 50 && len(v.Tags) <= 3
	}
	for _, c := range []struct {
		name, extra string
		ok          func(string) bool
	}{
		{"response_format json_schema", `"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + schema + `}}`, checkSchema},
		{"response_format json_object", `"response_format":{"type":"json_object"}`, func(s string) bool {
			var v map[string]any
			return json.Unmarshal([]byte(s), &v) == nil
		}},
		{"llama.cpp json_object with schema", `"response_format":{"type":"json_object","schema":` + schema + `}`, checkSchema},
		{"guided_json object", `"guided_json":` + schema, checkSchema},
		{"guided_json string", `"guided_json":` + strconvQuote(schema), checkSchema},
		{"guided_regex", `"guided_regex":"[a-z]{3}-[0-9]{2,4}"`, regexp.MustCompile(`^[a-z]{3}-[0-9]{2,4}$`).MatchString},
		{"guided_choice", `"guided_choice":["alpha","beta gamma"]`, func(s string) bool { return s == "alpha" || s == "beta gamma" }},
		{"guided_grammar", `"guided_grammar":"root ::= \"yes\" | \"no\""`, func(s string) bool { return s == "yes" || s == "no" }},
		{"llama.cpp grammar", `"grammar":"root ::= [0-9]+ \".\" [0-9]"`, regexp.MustCompile(`^[0-9]+\.[0-9]$`).MatchString},
		{"llama.cpp json_schema", `"json_schema":` + schema, checkSchema},
		{"structured_outputs", `"structured_outputs":{"choice":["x","y"]}`, func(s string) bool { return s == "x" || s == "y" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := 0; seed < 5; seed++ {
				body := `{"messages":[{"role":"user","content":"Weather?"}],"max_tokens":120,"seed":` + itoa(seed) + `,` + c.extra + `}`
				code, v := postJSON(t, url+"/v1/chat/completions", body)
				if code != 200 {
					t.Fatalf("%d %v", code, v)
				}
				if out := chatContent(t, v); !c.ok(out) {
					t.Fatalf("seed %d: output %q does not fit", seed, out)
				}
			}
			// The same constraint on /v1/completions, streamed.
			body := `{"prompt":"Weather:","max_tokens":120,"stream":true,` + c.extra + `}`
			var text strings.Builder
			for _, ev := range streamEvents(t, url+"/v1/completions", body) {
				for _, ch := range ev["choices"].([]any) {
					text.WriteString(ch.(map[string]any)["text"].(string))
				}
			}
			if !c.ok(text.String()) {
				t.Fatalf("streamed output %q does not fit", text.String())
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestStructuredOutputErrors(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newSimF(t))
	for _, c := range []struct {
		extra, param, want string
	}{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"integer","minimum":3,"maximum":1}}}`, "response_format.json_schema.schema", "can never be satisfied: #: no number lies between"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"$defs":{"a":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"required":["a"]}},"$ref":"#/$defs/a"}}}`, "response_format.json_schema.schema", "can never be satisfied"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","uniqueItems":true}}}`, "response_format.json_schema.schema", "not supported"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","maxLength":1000000}}}`, "response_format.json_schema.schema", "too large"},
		{`"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"string"}}}`, "response_format.json_schema.name", "name must be"},
		{`"response_format":{"type":"yaml"}`, "response_format.type", `"yaml" is not supported`},
		{`"response_format":{"type":"json_schema"}`, "response_format.json_schema", "needs a json_schema object"},
		{`"guided_regex":"(a"`, "guided_regex", "does not parse"},
		{`"guided_grammar":"root ::= root \"x\" | \"y\""`, "guided_grammar", "left-recursive"},
		{`"grammar":"root ::= \"a"`, "grammar", "1:10: unterminated literal"},
		{`"guided_choice":[]`, "guided_choice", "must not be empty"},
		{`"guided_json":{"type":"string"},"guided_regex":"a"`, "guided_regex", "guided_json and guided_regex both constrain"},
		{`"guided_json":[1]`, "guided_json", "must be a JSON schema"},
		{`"structured_outputs":{"regex":"a","choice":["b"]}`, "structured_outputs", "exactly one"},
		{`"guided_whitespace_pattern":" "`, "guided_whitespace_pattern", "not supported"},
	} {
		body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,` + c.extra + `}`
		code, v := postJSON(t, url+"/v1/chat/completions", body)
		e, _ := v["error"].(map[string]any)
		if code != 400 || e == nil || e["param"] != c.param || !strings.Contains(e["message"].(string), c.want) {
			t.Errorf("%s: %d %v, want 400 on %s containing %q", c.extra, code, v, c.param, c.want)
		}
	}
}

// TestStructuredOutputTokenBudget: a max_tokens (or a context window)
// that cannot hold the shortest output the constraint allows is a 400
// naming the field and the budget that can; that budget, streamed or
// not, gives a complete output that parses (never a 200 with an output
// cut short).
func TestStructuredOutputTokenBudget(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newSimF(t))
	schema := `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["city","temp","tags"],"additionalProperties":false}`
	parses := func(s string) bool {
		var v struct {
			City *string
			Temp *int
			Tags []string
		}
		d := json.NewDecoder(strings.NewReader(s))
		d.DisallowUnknownFields()
		return d.Decode(&v) == nil && v.City != nil && v.Temp != nil && v.Tags != nil
	}
	need := regexp.MustCompile(`set max_tokens to at least (\d+)`)
	body := func(maxTokens int, stream bool) string {
		return `{"messages":[{"role":"user","content":"Weather?"}],"max_tokens":` + itoa(maxTokens) + `,"stream":` + strconv.FormatBool(stream) + `,"guided_json":` + schema + `}`
	}
	code, v := postJSON(t, url+"/v1/chat/completions", body(3, false))
	e, _ := v["error"].(map[string]any)
	if code != 400 || e == nil || e["param"] != "max_tokens" {
		t.Fatalf("max_tokens 3: %d %v, want 400 naming max_tokens", code, v)
	}
	m := need.FindStringSubmatch(e["message"].(string))
	if m == nil {
		t.Fatalf("message %q names no budget", e["message"])
	}
	least, _ := strconv.Atoi(m[1])
	if least <= 3 || least > len(`{"city":"","temp":0,"tags":[]}`) {
		t.Fatalf("least budget %d, want more than 3 and at most the shortest output's bytes", least)
	}
	// The stream is refused before it begins, with the same 400.
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body(least-1, true)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"max_tokens"`) {
		t.Fatalf("stream with max_tokens %d: %d %s, want 400", least-1, resp.StatusCode, b)
	}
	for seed := 0; seed < 8; seed++ {
		code, v := postJSON(t, url+"/v1/chat/completions", strings.Replace(body(least, false), `"stream"`, `"seed":`+itoa(seed)+`,"stream"`, 1))
		if code != 200 {
			t.Fatalf("max_tokens %d: %d %v", least, code, v)
		}
		if out := chatContent(t, v); !parses(out) {
			t.Fatalf("max_tokens %d, seed %d: output %q does not parse", least, seed, out)
		}
		var text strings.Builder
		for _, ev := range streamEvents(t, url+"/v1/chat/completions", strings.Replace(body(least, true), `"stream"`, `"seed":`+itoa(seed)+`,"stream"`, 1)) {
			for _, ch := range ev["choices"].([]any) {
				if c, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
					text.WriteString(c)
				}
			}
		}
		if !parses(text.String()) {
			t.Fatalf("streamed with max_tokens %d, seed %d: %q does not parse", least, seed, text.String())
		}
	}
	// Without max_tokens the context window is the limit: a prompt that
	// leaves too little of it is refused, naming the messages.
	code, v = postJSON(t, url+"/tokenize", `{"messages":[{"role":"user","content":"water"}]}`)
	base, _ := v["count"].(float64)
	if code != 200 || base == 0 {
		t.Fatalf("tokenize: %d %v", code, v)
	}
	// Each " water" is one more token; leave least-1 of the 512.
	long := "water" + strings.Repeat(" water", 512-(least-1)-int(base))
	code, v = postJSON(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"`+long+`"}],"guided_json":`+schema+`}`)
	if e, _ := v["error"].(map[string]any); code != 400 || e == nil || e["param"] != "messages" || !strings.Contains(e["message"].(string), "context window") {
		t.Fatalf("long prompt without max_tokens: %d %v, want 400 naming messages", code, v)
	}
}
