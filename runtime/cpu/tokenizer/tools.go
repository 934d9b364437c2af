package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// ToolChatPrompt renders a conversation with tools, tool calls and tool
// results as the model's template does, and reports the syntax the model
// was asked to write calls in. A Jinja template that presents tools itself
// (Llama 3.1, Qwen 2.5/3, Mistral v0.3, Hermes) is given them as
// transformers gives them; the built-in formats of those families follow
// the same templates; any other template gets the tools described in its
// system message in the hermes format (see toolcall.GenericMessages).
func (t *Tokenizer) ToolChatPrompt(messages []runtime.ChatMessage, tools []runtime.Tool, addGenerationPrompt bool) (string, runtime.ToolSyntax, error) {
	c := t.chat
	if c.tmpl != nil {
		if syntax, ok := templateToolSyntax(c.source); ok {
			var reg []uintptr
			defer func() { c.order.release(reg) }()
			msgs, err := c.order.messages(messages, &reg)
			if err != nil {
				return "", "", err
			}
			var tl []any
			if len(tools) > 0 {
				if tl, err = c.order.tools(tools, &reg); err != nil {
					return "", "", err
				}
			}
			out, err := c.execute(msgs, tl, addGenerationPrompt)
			return out, syntax, err
		}
	} else {
		switch c.family {
		case FamilyLlama3:
			out, err := renderLlama3Tools(messages, tools, addGenerationPrompt, c.bos)
			return out, runtime.ToolLlama3JSON, err
		case FamilyChatML:
			out, err := renderChatMLTools(messages, tools, addGenerationPrompt)
			return out, runtime.ToolHermes, err
		case FamilyMistral:
			out, err := renderMistralTools(messages, tools, c.bos, c.eos)
			return out, runtime.ToolMistral, err
		}
	}
	out, err := t.ChatPrompt(toolcall.GenericMessages(messages, tools), addGenerationPrompt)
	return out, runtime.ToolHermes, err
}

// templateToolSyntax tells, from a Jinja template's source, whether it
// presents tools and in which syntax it asks for calls.
func templateToolSyntax(src string) (runtime.ToolSyntax, bool) {
	if !strings.Contains(src, "tools") {
		return "", false
	}
	switch {
	case strings.Contains(src, "[TOOL_CALLS]"):
		return runtime.ToolMistral, true
	case strings.Contains(src, "<tool_call>"):
		return runtime.ToolHermes, true
	case strings.Contains(src, "<|python_tag|>") || strings.Contains(src, "ipython"):
		return runtime.ToolLlama3JSON, true
	}
	return "", false
}

// keyOrder remembers the key order of the JSON objects (Go maps) handed to
// a template, so that its tojson writes them in the order the client
// wrote them, as transformers' does. Entries live for one rendering.
type keyOrder struct{ m sync.Map } // map pointer -> []string

func (k *keyOrder) release(reg []uintptr) {
	for _, p := range reg {
		k.m.Delete(p)
	}
}

// object makes a map and records its key order.
func (k *keyOrder) object(keys []string, vals []any, reg *[]uintptr) map[string]any {
	m := make(map[string]any, len(keys))
	for i, key := range keys {
		m[key] = vals[i]
	}
	p := reflect.ValueOf(m).Pointer()
	k.m.Store(p, keys)
	*reg = append(*reg, p)
	return m
}

func (k *keyOrder) keysOf(m map[string]any) []string {
	if v, ok := k.m.Load(reflect.ValueOf(m).Pointer()); ok {
		if keys := v.([]string); len(keys) == len(m) {
			return keys
		}
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// decode parses JSON text into template values (integers as int64,
// other numbers as float64, objects as ordered maps).
func (k *keyOrder) decode(raw []byte, reg *[]uintptr) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := k.decodeValue(dec, reg, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func (k *keyOrder) decodeValue(dec *json.Decoder, reg *[]uintptr, depth int) (any, error) {
	if depth > 512 {
		return nil, errors.New("JSON nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			out := []any{}
			for dec.More() {
				v, err := k.decodeValue(dec, reg, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		var keys []string
		var vals []any
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := k.decodeValue(dec, reg, depth+1)
			if err != nil {
				return nil, err
			}
			key := kt.(string)
			if i := slices.Index(keys, key); i >= 0 { // last duplicate wins
				vals[i] = v
				continue
			}
			keys = append(keys, key)
			vals = append(vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return k.object(keys, vals, reg), nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		f, _ := strconv.ParseFloat(t.String(), 64)
		return f, nil
	}
	return tok, nil
}

// tools turns tools into what transformers hands templates: OpenAI's
// {"type": "function", "function": {…}} dicts.
func (k *keyOrder) tools(tools []runtime.Tool, reg *[]uintptr) ([]any, error) {
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		keys := []string{"name"}
		vals := []any{t.Name}
		if t.Description != "" {
			keys = append(keys, "description")
			vals = append(vals, t.Description)
		}
		if len(t.Parameters) > 0 {
			p, err := k.decode(t.Parameters, reg)
			if err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			keys = append(keys, "parameters")
			vals = append(vals, p)
		}
		fn := k.object(keys, vals, reg)
		out = append(out, k.object([]string{"type", "function"}, []any{"function", fn}, reg))
	}
	return out, nil
}

// messages turns a conversation into template messages: tool calls with
// their arguments decoded (as vLLM hands them to templates), tool results
// with their call id and function name.
func (k *keyOrder) messages(messages []runtime.ChatMessage, reg *[]uintptr) ([]map[string]any, error) {
	out := make([]map[string]any, len(messages))
	for i, m := range messages {
		keys := []string{"role", "content"}
		vals := []any{m.Role, m.Content}
		if len(m.ToolCalls) > 0 {
			if m.Content == "" {
				vals[1] = nil
			}
			calls := make([]any, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				args := []byte(c.Arguments)
				if len(bytes.TrimSpace(args)) == 0 {
					args = []byte("{}")
				}
				a, err := k.decode(args, reg)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: %w", i, j, err)
				}
				fn := k.object([]string{"name", "arguments"}, []any{c.Name, a}, reg)
				calls[j] = k.object([]string{"id", "type", "function"}, []any{c.ID, "function", fn}, reg)
			}
			keys = append(keys, "tool_calls")
			vals = append(vals, calls)
		}
		if m.ToolCallID != "" {
			keys = append(keys, "tool_call_id")
			vals = append(vals, m.ToolCallID)
		}
		if m.Name != "" {
			keys = append(keys, "name")
			vals = append(vals, m.Name)
		}
		out[i] = k.object(keys, vals, reg)
	}
	return out, nil
}

// dictMethods are the Jinja dict methods with keys, values and items
// working on the dict itself, in its keys' order, as in Python: the
// library's own copy the dict and sort its keys, which would lose what a
// later tojson needs.
func (k *keyOrder) dictMethods(base *exec.MethodSet[map[string]any]) *exec.MethodSet[map[string]any] {
	methods := map[string]exec.Method[map[string]any]{}
	for _, name := range []string{"get", "pop", "setdefault", "update", "copy", "clear"} {
		if m, ok := base.Get(name); ok {
			methods[name] = m
		}
	}
	ordered := func(name string, pick func(m map[string]any, key string) any) {
		fallback, _ := base.Get(name)
		methods[name] = func(self map[string]any, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
			orig, ok := selfValue.Interface().(map[string]any)
			if !ok || len(args.Args) > 0 || len(args.KwArgs) > 0 {
				if fallback == nil {
					return nil, exec.ErrInvalidCall(fmt.Errorf("%s() takes no arguments", name))
				}
				return fallback(self, selfValue, args)
			}
			keys := k.keysOf(orig)
			out := make([]any, len(keys))
			for i, key := range keys {
				out[i] = pick(orig, key)
			}
			return out, nil
		}
	}
	ordered("keys", func(_ map[string]any, key string) any { return key })
	ordered("values", func(m map[string]any, key string) any { return m[key] })
	ordered("items", func(m map[string]any, key string) any { return []any{key, m[key]} })
	return exec.NewMethodSet(methods)
}

// templateFilters are the Jinja built-in filters with tojson replaced by
// transformers' behaviour.
func templateFilters(order *keyOrder) *exec.FilterSet {
	fs := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = fs.Replace("tojson", order.tojson)
	return fs
}

// tojson is transformers' tojson filter: json.dumps with
// ensure_ascii=False, keys in their order unless sort_keys, ", " and ": "
// separators (or the separators given), one item a line with indent.
func (k *keyOrder) tojson(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := 0
	itemSep, keySep := ", ", ": "
	sortKeys := false
	arg := func(name string, pos int) *exec.Value {
		if v, ok := params.KwArgs[name]; ok {
			return v
		}
		if pos < len(params.Args) {
			return params.Args[pos]
		}
		return nil
	}
	if v := arg("indent", 0); v != nil && !v.IsNil() {
		if !v.IsInteger() {
			return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("tojson: indent must be an integer, got %s", v.String())))
		}
		indent = v.Integer()
		itemSep = ","
	}
	if v := arg("separators", 99); v != nil && !v.IsNil() && v.Len() == 2 {
		itemSep, keySep = v.Index(0).String(), v.Index(1).String()
	}
	if v := arg("sort_keys", 99); v != nil {
		sortKeys = v.IsTrue()
	}
	var sb strings.Builder
	e := &pyEncoder{sb: &sb, order: k, indent: indent, itemSep: itemSep, keySep: keySep, sortKeys: sortKeys}
	if err := e.encode(in.Interface(), 0); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("tojson: %w", err)))
	}
	return exec.AsSafeValue(sb.String())
}

type pyEncoder struct {
	sb              *strings.Builder
	order           *keyOrder
	indent          int
	itemSep, keySep string
	sortKeys        bool
}

func (e *pyEncoder) newline(level int) {
	if e.indent > 0 {
		e.sb.WriteByte('\n')
		e.sb.WriteString(strings.Repeat(" ", e.indent*level))
	}
}

func (e *pyEncoder) encode(v any, level int) error {
	if level > 512 {
		return errors.New("value nested too deep")
	}
	switch x := v.(type) {
	case nil:
		e.sb.WriteString("null")
	case *exec.Value:
		return e.encode(x.Interface(), level)
	case bool:
		if x {
			e.sb.WriteString("true")
		} else {
			e.sb.WriteString("false")
		}
	case string:
		e.sb.WriteString(toolcall.PyString(x))
	case int:
		e.sb.WriteString(strconv.Itoa(x))
	case int64:
		e.sb.WriteString(strconv.FormatInt(x, 10))
	case float64:
		e.sb.WriteString(toolcall.PyFloat(x))
	case float32:
		e.sb.WriteString(toolcall.PyFloat(float64(x)))
	case json.Number:
		e.sb.WriteString(toolcall.PyNumber(x))
	case map[string]any:
		keys := e.order.keysOf(x)
		vals := make([]any, len(keys))
		for i, key := range keys {
			vals[i] = x[key]
		}
		return e.object(keys, vals, level)
	case exec.Dict:
		return e.dict(&x, level)
	case *exec.Dict:
		return e.dict(x, level)
	case []any:
		return e.array(len(x), func(i int) any { return x[i] }, level)
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			return e.array(rv.Len(), func(i int) any { return rv.Index(i).Interface() }, level)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
			e.sb.WriteString(strconv.FormatInt(rv.Int(), 10))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			e.sb.WriteString(strconv.FormatUint(rv.Uint(), 10))
		case reflect.Map:
			if rv.Type().Key().Kind() != reflect.String {
				return fmt.Errorf("cannot write a map keyed by %s", rv.Type().Key())
			}
			var keys []string
			for _, k := range rv.MapKeys() {
				keys = append(keys, k.String())
			}
			slices.Sort(keys)
			vals := make([]any, len(keys))
			for i, key := range keys {
				vals[i] = rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key())).Interface()
			}
			return e.object(keys, vals, level)
		default:
			if f, ok := v.(interface{ Float() float64 }); ok && !math.IsNaN(f.Float()) {
				e.sb.WriteString(toolcall.PyFloat(f.Float()))
				return nil
			}
			return fmt.Errorf("cannot write a %T as JSON", v)
		}
	}
	return nil
}

func (e *pyEncoder) dict(d *exec.Dict, level int) error {
	keys := make([]string, len(d.Pairs))
	vals := make([]any, len(d.Pairs))
	for i, p := range d.Pairs {
		keys[i], vals[i] = p.Key.String(), p.Value.Interface()
	}
	return e.object(keys, vals, level)
}

func (e *pyEncoder) object(keys []string, vals []any, level int) error {
	if e.sortKeys {
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		k2, v2 := make([]string, len(keys)), make([]any, len(keys))
		for i, j := range idx {
			k2[i], v2[i] = keys[j], vals[j]
		}
		keys, vals = k2, v2
	}
	e.sb.WriteByte('{')
	for i, key := range keys {
		if i > 0 {
			e.sb.WriteString(e.itemSep)
		}
		e.newline(level + 1)
		e.sb.WriteString(toolcall.PyString(key))
		e.sb.WriteString(e.keySep)
		if err := e.encode(vals[i], level+1); err != nil {
			return err
		}
	}
	if len(keys) > 0 {
		e.newline(level)
	}
	e.sb.WriteByte('}')
	return nil
}

func (e *pyEncoder) array(n int, at func(int) any, level int) error {
	e.sb.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			e.sb.WriteString(e.itemSep)
		}
		e.newline(level + 1)
		if err := e.encode(at(i), level+1); err != nil {
			return err
		}
	}
	if n > 0 {
		e.newline(level)
	}
	e.sb.WriteByte(']')
	return nil
}

// argsJSON writes a call's arguments as the templates' tojson does.
func argsJSON(args string) string {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	return toolcall.PythonJSON([]byte(args), 0)
}

// renderLlama3Tools is the Llama 3.1 JSON tool-calling format (the
// template vLLM ships for its llama3_json parser): tools in the first user
// message, calls as {"name": …, "parameters": …}, results in ipython turns.
func renderLlama3Tools(messages []runtime.ChatMessage, tools []runtime.Tool, addGenerationPrompt bool, bos string) (string, error) {
	var sb strings.Builder
	sb.WriteString(bos)
	system := ""
	if len(messages) > 0 && messages[0].Role == "system" {
		system = strings.TrimSpace(messages[0].Content)
		messages = messages[1:]
	} else if len(tools) > 0 {
		system = "You are a helpful assistant with tool calling capabilities. Only reply with a tool call if the function exists in the library provided by the user. If it doesn't exist, just reply directly in natural language. When you receive a tool call response, use the output to format an answer to the original user question."
	}
	sb.WriteString("<|start_header_id|>system<|end_header_id|>\n\n")
	if len(tools) > 0 {
		sb.WriteString("Environment: ipython\n")
	}
	sb.WriteString("Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n")
	sb.WriteString(system)
	sb.WriteString("<|eot_id|>")
	if len(tools) > 0 {
		if len(messages) == 0 {
			return "", &TemplateError{Message: "Cannot put tools in the first user message when there's no first user message!"}
		}
		first := strings.TrimSpace(messages[0].Content)
		messages = messages[1:]
		sb.WriteString("<|start_header_id|>user<|end_header_id|>\n\n")
		sb.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
		sb.WriteString(`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. `)
		sb.WriteString("Do not use variables.\n\n")
		for _, t := range tools {
			sb.WriteString(toolcall.ToolJSON(t, 4))
			sb.WriteString("\n\n")
		}
		sb.WriteString(first + "<|eot_id|>")
	}
	for _, m := range messages {
		switch {
		case len(m.ToolCalls) > 0:
			sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
			for i, c := range m.ToolCalls {
				if i > 0 {
					sb.WriteString("; ")
				}
				sb.WriteString(`{"name": "` + strings.TrimSpace(c.Name) + `", "parameters": ` + argsJSON(c.Arguments) + "}")
			}
			sb.WriteString("<|eot_id|>")
		case m.Role == "tool" || m.Role == "ipython":
			sb.WriteString("<|start_header_id|>ipython<|end_header_id|>\n\n")
			sb.WriteString(`{"output": ` + toolcall.PyString(m.Content) + "}")
			sb.WriteString("<|eot_id|>")
		default:
			sb.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
		}
	}
	if addGenerationPrompt {
		sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return sb.String(), nil
}

// renderChatMLTools is Qwen 2.5's tool format: tools in the system turn in
// <tools>, calls in <tool_call> blocks, consecutive results in one user
// turn of <tool_response> blocks.
func renderChatMLTools(messages []runtime.ChatMessage, tools []runtime.Tool, addGenerationPrompt bool) (string, error) {
	var sb strings.Builder
	rest := messages
	if len(tools) > 0 {
		sb.WriteString("<|im_start|>system\n")
		if len(messages) > 0 && messages[0].Role == "system" {
			sb.WriteString(messages[0].Content + "\n\n")
			rest = messages[1:]
		}
		sb.WriteString(toolcall.GenericToolsText(tools))
		sb.WriteString("<|im_end|>\n")
	}
	for i, m := range rest {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			sb.WriteString("<|im_start|>assistant")
			if m.Content != "" {
				sb.WriteString("\n" + m.Content)
			}
			for _, c := range m.ToolCalls {
				sb.WriteString("\n" + toolcall.CallText(c))
			}
			sb.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || rest[i-1].Role != "tool" {
				sb.WriteString("<|im_start|>user")
			}
			sb.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(rest)-1 || rest[i+1].Role != "tool" {
				sb.WriteString("<|im_end|>\n")
			}
		default:
			sb.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
	}
	if addGenerationPrompt {
		sb.WriteString("<|im_start|>assistant\n")
	}
	return sb.String(), nil
}

// renderMistralTools is Mistral 7B v0.3's tool format: [AVAILABLE_TOOLS]
// before the last user turn, [TOOL_CALLS] and [TOOL_RESULTS] with 9-char
// call ids, the system message prepended to the last user turn.
func renderMistralTools(messages []runtime.ChatMessage, tools []runtime.Tool, bos, eos string) (string, error) {
	system, hasSystem := "", false
	if len(messages) > 0 && messages[0].Role == "system" {
		system, hasSystem = messages[0].Content, true
		messages = messages[1:]
	}
	lastUser := -1
	n := 0
	for i, m := range messages {
		if m.Role == "user" {
			lastUser = i
		}
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			continue
		}
		if (m.Role == "user") != (n%2 == 0) {
			return "", &TemplateError{Message: "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."}
		}
		n++
	}
	id9 := func(id string) (string, error) {
		if len(id) < 9 {
			return "", &TemplateError{Message: "Tool call IDs should be alphanumeric strings with length >= 9!"}
		}
		return id[len(id)-9:], nil
	}
	var sb strings.Builder
	sb.WriteString(bos)
	for i, m := range messages {
		switch {
		case m.Role == "user":
			if len(tools) > 0 && i == lastUser {
				sb.WriteString("[AVAILABLE_TOOLS] [")
				for j, t := range tools {
					if j > 0 {
						sb.WriteString(", ")
					}
					sb.WriteString(toolcall.ToolJSON(t, 0))
				}
				sb.WriteString("][/AVAILABLE_TOOLS]")
			}
			if i == len(messages)-1 && hasSystem {
				sb.WriteString("[INST] " + system + "\n\n" + m.Content + "[/INST]")
			} else {
				sb.WriteString("[INST] " + m.Content + "[/INST]")
			}
		case len(m.ToolCalls) > 0:
			sb.WriteString("[TOOL_CALLS] [")
			for j, c := range m.ToolCalls {
				if j > 0 {
					sb.WriteString(", ")
				}
				id, err := id9(c.ID)
				if err != nil {
					return "", err
				}
				sb.WriteString(`{"name": ` + toolcall.PyString(c.Name) + `, "arguments": ` + argsJSON(c.Arguments) + `, "id": "` + id + `"}`)
			}
			sb.WriteString("]" + eos)
		case m.Role == "assistant":
			sb.WriteString(" " + m.Content + eos)
		case m.Role == "tool":
			id, err := id9(m.ToolCallID)
			if err != nil {
				return "", err
			}
			sb.WriteString(`[TOOL_RESULTS] {"content": ` + m.Content + `, "call_id": "` + id + `"}[/TOOL_RESULTS]`)
		default:
			return "", &TemplateError{Message: "Only user and assistant roles are supported, with the exception of an initial optional system message!"}
		}
	}
	return sb.String(), nil
}

var _ runtime.ToolPrompter = (*Tokenizer)(nil)
