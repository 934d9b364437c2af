package toolcall

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
)

type parsed struct {
	content string
	calls   []Call
}

// parse runs text through a parser in pieces of the given sizes (0: all at
// once) and checks that the streamed deltas add up to the result.
func parse(t *testing.T, mode Mode, syntax runtime.ToolSyntax, name, text string, rng *rand.Rand) parsed {
	t.Helper()
	p := NewParser(mode, syntax, name)
	var content strings.Builder
	var names []string
	var args []string
	take := func(c string, ds []Delta) {
		content.WriteString(c)
		for _, d := range ds {
			for len(names) <= d.Index {
				names = append(names, "")
				args = append(args, "")
			}
			if d.Name != "" {
				if names[d.Index] != "" {
					t.Fatalf("call %d named twice", d.Index)
				}
				names[d.Index] = d.Name
			}
			args[d.Index] += d.Arguments
		}
	}
	for rest := text; rest != ""; {
		n := len(rest)
		if rng != nil {
			n = 1 + rng.IntN(min(len(rest), 7))
		}
		take(p.Feed(rest[:n]))
		rest = rest[n:]
	}
	take(p.Finish())
	c, calls := p.Result()
	if calls != nil {
		if content.String() != c {
			t.Errorf("streamed content %q, result %q", content.String(), c)
		}
		for i, call := range calls {
			if i >= len(names) || names[i] != call.Name || strings.TrimSpace(args[i]) != call.Arguments {
				t.Errorf("call %d: streamed %q %q, result %+v", i, names, args, call)
			}
		}
	}
	return parsed{c, calls}
}

func TestParsers(t *testing.T) {
	for _, c := range []struct {
		name   string
		mode   Mode
		syntax runtime.ToolSyntax
		fn     string
		text   string
		want   parsed
	}{
		{"hermes one", Auto, runtime.ToolHermes, "", `Let me check.<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}
</tool_call>`, parsed{"Let me check.", []Call{{"get_weather", `{"city": "Paris", "days": [1, 2]}`}}}},
		{"hermes two, arguments first", Auto, runtime.ToolHermes, "", `<tool_call>{"arguments": {"q": "a}b\"c"}, "name": "search"}</tool_call>
<tool_call>{"name": "now", "arguments": {}}</tool_call>`, parsed{"", []Call{{"search", `{"q": "a}b\"c"}`}, {"now", `{}`}}}},
		{"hermes content only", Auto, runtime.ToolHermes, "", "Just text <tool with < signs", parsed{"Just text <tool with < signs", nil}},
		{"hermes broken call is content", Auto, runtime.ToolHermes, "", `<tool_call>{"name": nope}</tool_call>`, parsed{`<tool_call>{"name": nope}</tool_call>`, nil}},
		{"llama3 json", Auto, runtime.ToolLlama3JSON, "", ` {"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "neg", "parameters": {"x": -3.5}}`, parsed{"", []Call{{"add", `{"a": 1, "b": 2}`}, {"neg", `{"x": -3.5}`}}}},
		{"llama3 python tag", Auto, runtime.ToolLlama3JSON, "", `<|python_tag|>{"name": "f", "arguments": {"s": "x"}}`, parsed{"", []Call{{"f", `{"s": "x"}`}}}},
		{"llama3 content", Auto, runtime.ToolLlama3JSON, "", `The answer is {"name"}.`, parsed{`The answer is {"name"}.`, nil}},
		{"mistral", Auto, runtime.ToolMistral, "", `Sure. [TOOL_CALLS] [{"name": "f", "arguments": {"n": 1}}, {"name": "g", "arguments": {"m": true}}]`, parsed{"Sure. ", []Call{{"f", `{"n": 1}`}, {"g", `{"m": true}`}}}},
		{"mistral content", Auto, runtime.ToolMistral, "", `No calls [TOOL here`, parsed{`No calls [TOOL here`, nil}},
		{"required", Required, "", "", `[{"name": "f", "parameters": {"n": 1}} , {"name":"g","parameters":{}}]`, parsed{"", []Call{{"f", `{"n": 1}`}, {"g", `{}`}}}},
		{"named", Named, "", "f", ` {"a": [1, 2]} `, parsed{"", []Call{{"f", `{"a": [1, 2]}`}}}},
		{"scalar values", Auto, runtime.ToolHermes, "", `<tool_call>{"id": 12, "name": "f", "ok": true, "arguments": {"z": null}}</tool_call>`, parsed{"", []Call{{"f", `{"z": null}`}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			whole := parse(t, c.mode, c.syntax, c.fn, c.text, nil)
			if !reflect.DeepEqual(whole, c.want) {
				t.Fatalf("got %+v, want %+v", whole, c.want)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for k := 0; k < 20; k++ {
				if got := parse(t, c.mode, c.syntax, c.fn, c.text, rng); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("in pieces: got %+v, want %+v", got, c.want)
				}
			}
		})
	}
}

// byteTok is a vocabulary of single bytes (ids 0..255) and EOS (256).
type byteTok struct{}

func (byteTok) VocabSize() int           { return 257 }
func (byteTok) TokenBytes(id int) []byte { return []byte{byte(id)} }
func (byteTok) IsSpecial(id int) bool    { return id == 256 }
func (byteTok) EOS() []int               { return []int{256} }

func TestRequiredGrammar(t *testing.T) {
	tools := []runtime.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":5},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}`)},
		{Name: "tree", Parameters: json.RawMessage(`{"$defs":{"n":{"type":"object","properties":{"k":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["k"],"additionalProperties":false}},"$ref":"#/$defs/n"}`)},
		{Name: "now"},
	}
	v, err := grammar.NewVocab(byteTok{})
	if err != nil {
		t.Fatal(err)
	}
	for _, parallel := range []bool{false, true} {
		g, err := RequiredGrammar(RequiredSource(tools, parallel), grammar.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		ix, err := grammar.NewIndex(g, v, grammar.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		accept := func(s string) bool {
			m := ix.NewMatcher()
			ok, _ := m.AcceptBytes([]byte(s))
			return ok && m.Complete()
		}
		good := `[{"name":"get_weather","parameters":{"city":"Rome","unit":"c"}}]`
		two := `[{"name":"now","parameters":{}}, {"name":"tree","parameters":{"k":{"k":null}}}]`
		if !accept(good) || accept(two) != parallel {
			t.Errorf("parallel %v: one call %v, two calls %v", parallel, accept(good), accept(two))
		}
		for _, bad := range []string{`[]`, `[{"name":"nope","parameters":{}}]`, `[{"name":"get_weather","parameters":{"city":"Rome"}}]`, `{"name":"now","parameters":{}}`} {
			if accept(bad) {
				t.Errorf("accepted %s", bad)
			}
		}
		p := parse(t, Required, "", "", two, nil)
		if parallel && len(p.calls) != 2 {
			t.Errorf("parsed %+v", p)
		}
	}
	_, err = RequiredGrammar(RequiredSource([]runtime.Tool{{Name: "bad", Parameters: json.RawMessage(`{"type":"integer","minimum":2,"maximum":1}`)}}, false), grammar.Limits{})
	if err == nil || !strings.Contains(err.Error(), "tools[0] (bad) parameters") {
		t.Errorf("got %v", err)
	}
}

func FuzzParser(f *testing.F) {
	f.Add(uint8(0), `a<tool_call>{"name":"f","arguments":{}}</tool_call>`)
	f.Add(uint8(1), `{"name":"f","parameters":{"x":[1,{"y":"}"}]}}; {"name":"g"}`)
	f.Add(uint8(2), `[TOOL_CALLS] [{"name":"f","arguments":{}}]`)
	f.Add(uint8(3), `[{"name":"f","parameters":{}}]`)
	f.Fuzz(func(t *testing.T, which uint8, text string) {
		modes := []struct {
			m Mode
			s runtime.ToolSyntax
		}{{Auto, runtime.ToolHermes}, {Auto, runtime.ToolLlama3JSON}, {Auto, runtime.ToolMistral}, {Required, ""}, {Named, ""}}
		c := modes[int(which)%len(modes)]
		rng := rand.New(rand.NewPCG(uint64(len(text)), 3))
		whole := parse(t, c.m, c.s, "f", text, nil)
		pieces := parse(t, c.m, c.s, "f", text, rng)
		if !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("whole %+v, in pieces %+v", whole, pieces)
		}
		for _, call := range whole.calls {
			if c.m != Named && !json.Valid([]byte(call.Arguments)) {
				t.Fatalf("call %+v has invalid arguments", call)
			}
		}
	})
}

func TestPythonJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":[1.5,true,null,"x<y é"],"c":{}}`: `{"b": 1, "a": [1.5, true, null, "x<y é"], "c": {}}`,
		`[1e-5, 1e16, 2.0, 100.25, 1E400]`:           `[1e-05, 1e+16, 2.0, 100.25, Infinity]`,
		`{"q": "a\"b"}`:                              `{"q": "a\"b"}`,
		`not json`:                                   `not json`,
	} {
		if got := PythonJSON([]byte(in), 0); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
	if got := PythonJSON([]byte(`{"a":[1,{"b":2}],"e":[]}`), 4); got != "{\n    \"a\": [\n        1,\n        {\n            \"b\": 2\n        }\n    ],\n    \"e\": []\n}" {
		t.Errorf("indent: %q", got)
	}
}

func TestGenericMessages(t *testing.T) {
	tools := []runtime.Tool{{Name: "f", Description: "does f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}}
	msgs := []runtime.ChatMessage{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []runtime.ToolCall{{ID: "1", Name: "f", Arguments: `{"x":1}`}, {ID: "2", Name: "f", Arguments: `{"x":2}`}}},
		{Role: "tool", ToolCallID: "1", Content: "one"},
		{Role: "tool", ToolCallID: "2", Content: "two"},
	}
	got := GenericMessages(msgs, tools)
	want := []runtime.ChatMessage{
		{Role: "system", Content: GenericToolsText(tools)},
		{Role: "user", Content: "hi"},
		{Role: "assistant", Content: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 2}}\n</tool_call>"},
		{Role: "user", Content: "<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response>"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	if !strings.Contains(got[0].Content, `{"type": "function", "function": {"name": "f", "description": "does f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}`) {
		t.Errorf("tools text %q", got[0].Content)
	}
}
