package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/sim"
)

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":20},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}}},
{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}}}]`

var toolValidators = map[string]string{
	"get_weather": `{"type":"object","properties":{"city":{"type":"string","maxLength":20},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}`,
	"get_time":    `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}`,
}

type call struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []call  `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// newToolSim is a sim engine with room for prompts that describe tools.
func newToolSim(t *testing.T) *sim.Engine {
	t.Helper()
	e, err := sim.New(sim.Config{Model: "m", MaxContext: 8192, MaxConcurrency: 4, TimeScale: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func postChat(t *testing.T, url, body string) (int, chatAnswer, string) {
	t.Helper()
	code, v := postJSON(t, url+"/v1/chat/completions", body)
	raw, _ := json.Marshal(v)
	var a chatAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return code, a, string(raw)
}

// checkCalls validates tool calls against their functions' schemas.
func checkCalls(t *testing.T, calls []call) {
	t.Helper()
	if err := callsError(t, calls); err != nil {
		t.Fatal(err)
	}
}

func callsError(t *testing.T, calls []call) error {
	for _, c := range calls {
		schema, ok := toolValidators[c.Function.Name]
		if !ok || c.Type != "function" || c.ID == "" {
			return fmt.Errorf("call %+v", c)
		}
		if err := validateWith(compileValidator(t, schema), c.Function.Arguments); err != nil {
			return fmt.Errorf("call %s arguments %q: %v", c.Function.Name, c.Function.Arguments, err)
		}
	}
	return nil
}

// streamedCalls rebuilds the tool calls and content of a streamed answer
// from its deltas, checking their shape.
func streamedCalls(t *testing.T, events []map[string]any) ([]call, string, string) {
	t.Helper()
	var calls []call
	var content strings.Builder
	finish := ""
	for _, ev := range events {
		for _, ch := range ev["choices"].([]any) {
			c := ch.(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d, _ := c["delta"].(map[string]any)
			if s, ok := d["content"].(string); ok {
				content.WriteString(s)
			}
			tcs, _ := d["tool_calls"].([]any)
			for _, x := range tcs {
				tc := x.(map[string]any)
				i := int(tc["index"].(float64))
				fn := tc["function"].(map[string]any)
				if i == len(calls) {
					if tc["id"] == nil || tc["type"] != "function" || fn["name"] == nil {
						t.Fatalf("first delta of call %d: %v", i, tc)
					}
					calls = append(calls, call{ID: tc["id"].(string), Type: "function"})
					calls[i].Function.Name = fn["name"].(string)
				} else if i > len(calls) || tc["id"] != nil {
					t.Fatalf("delta %v out of order", tc)
				}
				calls[i].Function.Arguments += fn["arguments"].(string)
			}
		}
	}
	return calls, content.String(), finish
}

func TestToolChoiceConstrained(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newToolSim(t))
	msgs := `"messages":[{"role":"user","content":"What is the weather in Paris?"}]`
	for seed := 0; seed < 8; seed++ {
		// A named function: the output is its arguments.
		body := fmt.Sprintf(`{%s,"tools":%s,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":80,"seed":%d}`, msgs, weatherTools, seed)
		code, a, raw := postChat(t, url, body)
		if code != 200 || len(a.Choices) != 1 {
			t.Fatalf("%d %s", code, raw)
		}
		ch := a.Choices[0]
		if len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" || ch.Message.Content != nil || ch.FinishReason != "stop" {
			t.Fatalf("named: %s", raw)
		}
		checkCalls(t, ch.Message.ToolCalls)
		// required, one call or several.
		for _, parallel := range []bool{false, true} {
			body = fmt.Sprintf(`{%s,"tools":%s,"tool_choice":"required","parallel_tool_calls":%v,"max_tokens":120,"seed":%d}`, msgs, weatherTools, parallel, seed)
			code, a, raw = postChat(t, url, body)
			if code != 200 {
				t.Fatalf("%d %s", code, raw)
			}
			ch = a.Choices[0]
			if len(ch.Message.ToolCalls) == 0 || (!parallel && len(ch.Message.ToolCalls) != 1) || ch.FinishReason != "tool_calls" {
				t.Fatalf("required (parallel %v): %s", parallel, raw)
			}
			checkCalls(t, ch.Message.ToolCalls)
		}
		// Streamed: deltas add up to valid calls.
		body = fmt.Sprintf(`{%s,"tools":%s,"tool_choice":"required","max_tokens":120,"seed":%d,"stream":true}`, msgs, weatherTools, seed)
		calls, content, finish := streamedCalls(t, streamEvents(t, url+"/v1/chat/completions", body))
		if len(calls) == 0 || content != "" || finish != "tool_calls" {
			t.Fatalf("streamed required: %+v %q %s", calls, content, finish)
		}
		checkCalls(t, calls)
		body = fmt.Sprintf(`{%s,"tools":%s,"tool_choice":{"type":"function","function":{"name":"get_time"}},"max_tokens":40,"seed":%d,"stream":true}`, msgs, weatherTools, seed)
		calls, _, finish = streamedCalls(t, streamEvents(t, url+"/v1/chat/completions", body))
		if len(calls) != 1 || calls[0].Function.Name != "get_time" || finish != "stop" {
			t.Fatalf("streamed named: %+v %s", calls, finish)
		}
		checkCalls(t, calls)
	}
}

// scripted is an engine that writes a fixed text, as a model that calls
// tools would.
type scripted struct {
	*sim.Engine
	text string
}

func (s scripted) Generate(ctx context.Context, req *runtime.Request) (*runtime.Stream, error) {
	ids, err := s.Tokenizer().Encode(s.text, false)
	if err != nil {
		return nil, err
	}
	st := runtime.NewStream(len(req.Prompt))
	go func() {
		for _, id := range ids {
			st.Push(runtime.Token{ID: id, Time: time.Now()})
		}
		st.Finish(runtime.FinishStop, nil)
	}()
	return st, nil
}

func TestToolCallsParsedFromOutput(t *testing.T) {
	for _, c := range []struct {
		text    string
		content string
		names   []string
	}{
		{"Let me look.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>", "Let me look.", []string{"get_weather", "get_time"}},
		{"It is sunny in Paris.", "It is sunny in Paris.", nil},
	} {
		url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, scripted{newToolSim(t), c.text})
		body := `{"messages":[{"role":"user","content":"Weather?"}],"tools":` + weatherTools + `}`
		code, a, raw := postChat(t, url, body)
		if code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		ch := a.Choices[0]
		var got []string
		for _, tc := range ch.Message.ToolCalls {
			got = append(got, tc.Function.Name)
		}
		wantFinish := "stop"
		if len(c.names) > 0 {
			wantFinish = "tool_calls"
		}
		if fmt.Sprint(got) != fmt.Sprint(c.names) || ch.Message.Content == nil || *ch.Message.Content != c.content || ch.FinishReason != wantFinish {
			t.Fatalf("%q: %s", c.text, raw)
		}
		checkCalls(t, ch.Message.ToolCalls)
		calls, content, finish := streamedCalls(t, streamEvents(t, url+"/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`))
		if content != c.content || len(calls) != len(c.names) || finish != wantFinish {
			t.Fatalf("streamed %q: %+v %q %s", c.text, calls, content, finish)
		}
		checkCalls(t, calls)
		// tool_choice none: the text is content, calls and all.
		code, a, raw = postChat(t, url, strings.TrimSuffix(body, "}")+`,"tool_choice":"none"}`)
		if code != 200 || len(a.Choices[0].Message.ToolCalls) != 0 || *a.Choices[0].Message.Content != c.text {
			t.Fatalf("none: %s", raw)
		}
	}
}

func TestToolConversation(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newToolSim(t))
	history := `[{"role":"user","content":"Weather in Paris?"},
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":1}"}}],"refusal":null},
{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"}]`
	code, a, raw := postChat(t, url, `{"messages":`+history+`,"tools":`+weatherTools+`,"max_tokens":8}`)
	if code != 200 || a.Choices[0].Message.Content == nil {
		t.Fatalf("%d %s", code, raw)
	}
	// The prompt holds the call and its result.
	code2, v := postJSON(t, url+"/tokenize", `{"prompt":"x"}`)
	if code2 != 200 || v["count"] == nil {
		t.Fatalf("tokenize: %v", v)
	}
}

func TestToolErrors(t *testing.T) {
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, newToolSim(t))
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		body, param, want string
	}{
		{`{` + user + `,"tools":` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"get_stock"}}}`, "tool_choice", `names function "get_stock", which is not in tools`},
		{`{` + user + `,"tool_choice":"required"}`, "tool_choice", "needs tools"},
		{`{` + user + `,"tools":` + weatherTools + `,"tool_choice":"sometimes"}`, "tool_choice", `"sometimes" is not supported`},
		{`{` + user + `,"tools":[{"type":"function","function":{"name":"bad name"}}]}`, "tools[0].function.name", "must be 1 to 64"},
		{`{` + user + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[1].function.name", "declared twice"},
		{`{` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools[0].function.parameters", "JSON Schema object"},
		{`{` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"integer","minimum":3,"maximum":1}}}],"tool_choice":"required"}`, "tools", "can never be satisfied"},
		{`{` + user + `,"tools":` + weatherTools + `,"tool_choice":"required","response_format":{"type":"json_object"}}`, "response_format", "both constrain"},
		{`{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_9","content":"x"}]}`, "messages[1].tool_call_id", `"call_9" answers no tool call made earlier`},
		{`{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", "is required"},
		{`{"messages":[{"role":"user","content":"hi","tool_calls":[]}]}`, "messages[0].tool_calls", "only assistant messages"},
		{`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1"}}]}]}`, "messages[1].tool_calls[0].function.arguments", "must be a JSON object"},
	} {
		code, v := postJSON(t, url+"/v1/chat/completions", c.body)
		e, _ := v["error"].(map[string]any)
		if code != 400 || e == nil || e["param"] != c.param || !strings.Contains(e["message"].(string), c.want) {
			t.Errorf("%s: %d %v, want 400 on %s containing %q", c.body, code, v, c.param, c.want)
		}
	}
}
