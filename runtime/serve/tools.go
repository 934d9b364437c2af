package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// Tool calling: tools, tool_choice and parallel_tool_calls on chat
// completions, tool calls and tool results in the conversation, and tool
// calls read from the model's output into tool_calls (streamed as
// deltas), as vLLM does. tool_choice "required" and a named function
// constrain decoding, so their arguments always parse and fit the
// function's parameters schema.

// maxTools bounds the tools of one request (OpenAI's limit).
const maxTools = 128

// kindToolCalls is the constraint of tool_choice "required": see
// toolcall.RequiredGrammar.
const kindToolCalls grammar.Kind = "tool_calls"

// Tool choices.
const (
	choiceAuto     = "auto"
	choiceNone     = "none"
	choiceRequired = "required"
	choiceNamed    = "named"
)

// toolSpec is a request's tool settings.
type toolSpec struct {
	tools    []runtime.Tool
	choice   string
	name     string // the named function
	parallel bool
}

// mode is how the output is read, and whether it is at all.
func (t *toolSpec) mode() (toolcall.Mode, bool) {
	switch t.choice {
	case choiceRequired:
		return toolcall.Required, true
	case choiceNamed:
		return toolcall.Named, true
	case choiceAuto:
		return toolcall.Auto, len(t.tools) > 0
	}
	return 0, false
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// parseTools validates tools, tool_choice and parallel_tool_calls; it
// returns nil when the request has no tools and names no tool choice.
func parseTools(b *chatBody) (*toolSpec, *apiError) {
	spec := &toolSpec{choice: choiceAuto, parallel: true}
	if b.ParallelToolCalls != nil {
		spec.parallel = *b.ParallelToolCalls
	}
	if !isNull(b.Tools) {
		var tools []struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      *bool           `json:"strict"`
			} `json:"function"`
		}
		dec := json.NewDecoder(bytes.NewReader(b.Tools))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tools); err != nil {
			return nil, badRequest("tools", "tools must be an array of {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}}: %v", err)
		}
		if len(tools) > maxTools {
			return nil, badRequest("tools", "at most %d tools are allowed, got %d", maxTools, len(tools))
		}
		seen := map[string]bool{}
		for i, t := range tools {
			param := fmt.Sprintf("tools[%d]", i)
			if t.Type != "function" {
				return nil, badRequest(param+".type", "%s.type must be \"function\", got %q", param, t.Type)
			}
			if t.Function == nil {
				return nil, badRequest(param+".function", "%s.function is required", param)
			}
			f := t.Function
			if !toolNameRE.MatchString(f.Name) {
				return nil, badRequest(param+".function.name", "%s.function.name must be 1 to 64 letters, digits, underscores or dashes, got %q", param, f.Name)
			}
			if seen[f.Name] {
				return nil, badRequest(param+".function.name", "function %q is declared twice in tools", f.Name)
			}
			seen[f.Name] = true
			params := bytes.TrimSpace(f.Parameters)
			if isNull(params) {
				params = nil
			} else if params[0] != '{' {
				return nil, badRequest(param+".function.parameters", "%s.function.parameters must be a JSON Schema object", param)
			}
			spec.tools = append(spec.tools, runtime.Tool{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}
	if !isNull(b.ToolChoice) {
		raw := bytes.TrimSpace(b.ToolChoice)
		if raw[0] == '"' {
			var s string
			_ = json.Unmarshal(raw, &s)
			switch s {
			case choiceAuto, choiceNone, choiceRequired:
				spec.choice = s
			default:
				return nil, badRequest("tool_choice", "tool_choice %q is not supported (want auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}})", s)
			}
		} else {
			var named struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
				return nil, badRequest("tool_choice", "tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}")
			}
			spec.choice, spec.name = choiceNamed, named.Function.Name
		}
	}
	switch {
	case (spec.choice == choiceRequired || spec.choice == choiceNamed) && len(spec.tools) == 0:
		return nil, badRequest("tool_choice", "tool_choice %s needs tools", spec.choice)
	case spec.choice == choiceNamed && spec.tool(spec.name) == nil:
		return nil, badRequest("tool_choice", "tool_choice names function %q, which is not in tools", spec.name)
	}
	if len(spec.tools) == 0 && spec.choice == choiceAuto {
		return nil, nil
	}
	return spec, nil
}

func (t *toolSpec) tool(name string) *runtime.Tool {
	for i := range t.tools {
		if t.tools[i].Name == name {
			return &t.tools[i]
		}
	}
	return nil
}

// constraint is what tool_choice required or a named function constrains
// the output to, nil for auto and none.
func (t *toolSpec) constraint() *constraintSpec {
	switch t.choice {
	case choiceRequired:
		return &constraintSpec{kind: kindToolCalls, source: toolcall.RequiredSource(t.tools, t.parallel), param: "tools"}
	case choiceNamed:
		for i, tl := range t.tools {
			if tl.Name == t.name {
				return &constraintSpec{kind: grammar.KindJSONSchema, source: toolcall.ParametersSchema(tl), param: fmt.Sprintf("tools[%d].function.parameters", i)}
			}
		}
	}
	return nil
}

// toolMessage fills in a chat message's tool fields: an assistant's
// tool_calls, or a tool result's tool_call_id, which must answer a call
// made earlier in the conversation (calls maps those ids to functions).
func toolMessage(m *chatMessageBody, msg *runtime.ChatMessage, param string, calls map[string]string) *apiError {
	if msg.Role == "tool" {
		if m.ToolCallID == nil || *m.ToolCallID == "" {
			return badRequest(param+".tool_call_id", "%s.tool_call_id is required for a tool message", param)
		}
		fn, ok := calls[*m.ToolCallID]
		if !ok {
			return badRequest(param+".tool_call_id", "%s.tool_call_id %q answers no tool call made earlier in the conversation", param, *m.ToolCallID)
		}
		msg.ToolCallID = *m.ToolCallID
		msg.Name = fn
		if m.Name != nil && *m.Name != "" {
			msg.Name = *m.Name
		}
		return nil
	}
	if isNull(m.ToolCalls) {
		return nil
	}
	if msg.Role != "assistant" {
		return badRequest(param+".tool_calls", "%s: only assistant messages have tool_calls", param)
	}
	var tcs []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(m.ToolCalls, &tcs); err != nil {
		return badRequest(param+".tool_calls", "%s.tool_calls must be an array of {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}: %v", param, err)
	}
	for j, tc := range tcs {
		p := fmt.Sprintf("%s.tool_calls[%d]", param, j)
		switch {
		case tc.ID == "":
			return badRequest(p+".id", "%s.id is required", p)
		case tc.Type != "function":
			return badRequest(p+".type", "%s.type must be \"function\"", p)
		case tc.Function.Name == "":
			return badRequest(p+".function.name", "%s.function.name is required", p)
		}
		args := bytes.TrimSpace([]byte(tc.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		if args[0] != '{' || !json.Valid(args) {
			return badRequest(p+".function.arguments", "%s.function.arguments must be a JSON object (as text)", p)
		}
		calls[tc.ID] = tc.Function.Name
		msg.ToolCalls = append(msg.ToolCalls, runtime.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: string(args)})
	}
	return nil
}

// chatPrompt renders the request's conversation: through the chat
// template's tool support when the request has tools or the conversation
// tool calls, returning the syntax the model was asked to use.
func chatPrompt(st *engineState, r *genRequest) (string, runtime.ToolSyntax, *apiError) {
	if r.tools == nil && !r.toolTurns {
		text, err := st.tok.ChatPrompt(r.messages, r.addGenPrompt)
		if err != nil {
			return "", "", badRequest("messages", "%v", err)
		}
		return text, "", nil
	}
	tp, ok := st.tok.(runtime.ToolPrompter)
	if !ok {
		return "", "", badRequest("tools", "the %s runtime's chat template cannot present tools", st.info.Runtime)
	}
	var tools []runtime.Tool
	if r.tools != nil {
		tools = r.tools.tools
	}
	text, syntax, err := tp.ToolChatPrompt(r.messages, tools, r.addGenPrompt)
	if err != nil {
		return "", "", badRequest("messages", "%v", err)
	}
	return text, syntax, nil
}

// newToolParser returns the parser of one sequence's output, nil when its
// tool calls are not read.
func (j *job) newToolParser() *toolcall.Parser {
	if j.r.tools == nil {
		return nil
	}
	mode, ok := j.r.tools.mode()
	if !ok {
		return nil
	}
	return toolcall.NewParser(mode, j.toolSyntax, j.r.tools.name)
}

// addEvent queues text (and, with logprobs, the token) for the client,
// reading tool calls out of the text when the request asks for them.
func (j *job) addEvent(q *seqState, text []byte, t runtime.Token, hasTok bool) {
	if q.tools == nil {
		if len(text) > 0 || hasTok {
			q.events = append(q.events, event{text: text, tok: t, hasTok: hasTok})
		}
		return
	}
	content, calls := q.tools.Feed(string(text))
	if content != "" || len(calls) > 0 || hasTok {
		q.events = append(q.events, event{text: []byte(content), calls: calls, tok: t, hasTok: hasTok})
	}
}

// endText queues the text held back at the end of a sequence and what
// its tool parser still held.
func (j *job) endText(q *seqState, rest []byte) {
	if q.tools == nil {
		if len(rest) > 0 {
			q.events = append(q.events, event{text: rest})
		}
		return
	}
	c1, d1 := q.tools.Feed(string(rest))
	c2, d2 := q.tools.Finish()
	if c := c1 + c2; c != "" || len(d1)+len(d2) > 0 {
		q.events = append(q.events, event{text: []byte(c), calls: append(d1, d2...)})
	}
}

// callID is the id of a sequence's i-th tool call, made when first asked:
// vLLM's "chatcmpl-tool-…", or the 9 characters Mistral's template needs.
func (j *job) callID(q *seqState, i int) string {
	for len(q.callIDs) <= i {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id := "chatcmpl-tool-" + hex.EncodeToString(b[:])
		if j.toolSyntax == runtime.ToolMistral {
			const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			c := make([]byte, 9)
			for k := range c {
				c[k] = alnum[int(b[k])%len(alnum)]
			}
			id = string(c)
		}
		q.callIDs = append(q.callIDs, id)
	}
	return q.callIDs[i]
}

// finishReason is the finish_reason of q: "tool_calls" when its output
// held tool calls (tool_choice auto or required), as vLLM reports.
func (j *job) finishReason(q *seqState) string {
	if q.tools != nil && q.sawCalls && j.r.tools.choice != choiceNamed && q.finish != "abort" {
		return "tool_calls"
	}
	return q.finish
}

// appendToolCallDeltas writes a chunk's "tool_calls":[…] delta.
func (j *job) appendToolCallDeltas(b []byte, q *seqState, calls []toolcall.Delta) []byte {
	q.sawCalls = true
	b = append(b, `"tool_calls":[`...)
	for i, d := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(d.Index), 10)
		if d.Name != "" {
			b = append(b, `,"id":`...)
			b = appendJSONString(b, j.callID(q, d.Index))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendJSONString(b, d.Name)
			b = append(b, `,"arguments":`...)
		} else {
			b = append(b, `,"function":{"arguments":`...)
		}
		b = appendJSONString(b, d.Arguments)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// appendMessage writes a non-streamed chat choice's message.
func (j *job) appendMessage(b []byte, q *seqState) []byte {
	b = append(b, `"message":{"role":"assistant","content":`...)
	if q.tools == nil {
		b = appendJSONString(b, q.text)
		return append(b, '}')
	}
	content, calls := q.tools.Result()
	if content == "" && len(calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, content)
	}
	if len(calls) > 0 {
		q.sawCalls = true
		b = append(b, `,"tool_calls":[`...)
		for i, c := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, j.callID(q, i))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `,"arguments":`...)
			b = appendJSONString(b, c.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
