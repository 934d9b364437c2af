package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// Tool-calling chat templates as published, typed in: Qwen 2.5 Instruct's
// (tokenizer_config.json), the Llama 3.1 JSON template vLLM ships for its
// llama3_json parser, and Mistral 7B Instruct v0.3's.
const (
	qwen25ToolTemplate = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`

	llama31ToolTemplate = `{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- if messages[0]['content'] is string %}
        {%- set system_message = messages[0]['content']|trim %}
    {%- else %}
        {%- set system_message = messages[0]['content'][0]['text']|trim %}
    {%- endif %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- if tools is not none %}
        {%- set system_message = "You are a helpful assistant with tool calling capabilities. Only reply with a tool call if the function exists in the library provided by the user. If it doesn't exist, just reply directly in natural language. When you receive a tool call response, use the output to format an answer to the original user question." %}
    {%- else %}
        {%- set system_message = "" %}
    {%- endif %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call. " }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. ' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- if messages[0]['content'] is string %}
            {%- set first_user_message = messages[0]['content']|trim %}
        {%- else %}
            {%- set first_user_message = messages[0]['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text') | map('trim') | join('\n') %}
        {%- endif %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. ' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}
        {%- if message['content'] is string %}
            {{- message['content'] | trim}}
        {%- endif %}
        {{- '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if message.tool_calls|length != 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name|trim + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is string %}
            {{- { "output": message.content } | tojson }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
`

	mistralV03ToolTemplate = `{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}
{%- for message in loop_messages | rejectattr("role", "equalto", "tool") | rejectattr("role", "equalto", "tool_results") | selectattr("tool_calls", "undefined") %}
    {%- if (message["role"] == "user") != (loop.index0 % 2 == 0) %}
        {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif %}
{%- endfor %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
        {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
`
)

var weatherTools = []runtime.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"city name"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`)},
}

// toolConversation has a system message, a call, its result and a follow-up.
func toolConversation(id string) []runtime.ChatMessage {
	return []runtime.ChatMessage{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []runtime.ToolCall{{ID: id, Name: "get_weather", Arguments: `{"city": "Paris", "unit": "c"}`}}},
		{Role: "tool", ToolCallID: id, Name: "get_weather", Content: `{"temp": 21}`},
		{Role: "assistant", Content: "21 degrees."},
		{Role: "user", Content: "And tomorrow?"},
	}
}

// TestToolTemplatesMatchBuiltins renders the same conversation with a
// family's published tool template and with its built-in format: they
// must agree, so a GGUF without a template prompts tools as its family
// does. The reported syntax is the family's.
func TestToolTemplatesMatchBuiltins(t *testing.T) {
	now := func() time.Time { return time.Date(2024, time.July, 26, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name     string
		base     []gguf.KV
		template string
		id       string
		syntax   runtime.ToolSyntax
	}{
		{"qwen2.5", gpt2Vocab("qwen2"), qwen25ToolTemplate, "call_1", runtime.ToolHermes},
		{"mistral v0.3", mistralVocab(), mistralV03ToolTemplate, "abcDEF123", runtime.ToolMistral},
	} {
		t.Run(c.name, func(t *testing.T) {
			builtin, err := New(parseKV(t, c.base))
			if err != nil {
				t.Fatal(err)
			}
			kv := append(append([]gguf.KV(nil), c.base...), gguf.KV{Key: "tokenizer.chat_template", Value: c.template})
			tmpl, err := NewWithOptions(parseKV(t, kv), Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if ct := tmpl.ChatTemplate(); ct.Builtin {
				t.Fatalf("template not used: %v", ct.ParseError)
			}
			conv := toolConversation(c.id)
			want, wantSyntax, err := tmpl.ToolChatPrompt(conv, weatherTools, true)
			if err != nil {
				t.Fatal(err)
			}
			got, gotSyntax, err := builtin.ToolChatPrompt(conv, weatherTools, true)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || gotSyntax != c.syntax || wantSyntax != c.syntax {
				t.Errorf("built-in (%s):\n%s\ntemplate (%s):\n%s", gotSyntax, got, wantSyntax, want)
			}
		})
	}
}

func TestLlama31ToolTemplate(t *testing.T) {
	now := func() time.Time { return time.Date(2024, time.July, 26, 0, 0, 0, 0, time.UTC) }
	kv := append(llama3Vocab(), gguf.KV{Key: "tokenizer.chat_template", Value: llama31ToolTemplate})
	tmpl, err := NewWithOptions(parseKV(t, kv), Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := New(parseKV(t, llama3Vocab()))
	if err != nil {
		t.Fatal(err)
	}
	conv := toolConversation("call_1")
	want, syntax, err := tmpl.ToolChatPrompt(conv, weatherTools, true)
	if err != nil || syntax != runtime.ToolLlama3JSON {
		t.Fatalf("%v %s", err, syntax)
	}
	got, _, err := builtin.ToolChatPrompt(conv, weatherTools, true)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("built-in:\n%s\ntemplate:\n%s", got, want)
	}
	// The tools are written with transformers' tojson(indent=4), keys in
	// the client's order.
	if !strings.Contains(want, "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Weather of a city\",\n        \"parameters\": {\n            \"type\": \"object\",") {
		t.Errorf("tools not written as transformers does:\n%s", want)
	}
	if !strings.Contains(want, `{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}<|eot_id|>`) ||
		!strings.Contains(want, `<|start_header_id|>ipython<|end_header_id|>

{"output": "{\"temp\": 21}"}<|eot_id|>`) {
		t.Errorf("call or result not rendered:\n%s", want)
	}
}

// TestToolsWithoutToolTemplate: a template that does not present tools
// gets them in its system message in the hermes format.
func TestToolsWithoutToolTemplate(t *testing.T) {
	tk := withTemplate(t, gpt2Vocab("qwen2"), chatMLTemplate)
	got, syntax, err := tk.ToolChatPrompt(toolConversation("call_1"), weatherTools, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tk.ChatPrompt(toolcall.GenericMessages(toolConversation("call_1"), weatherTools), true)
	if err != nil {
		t.Fatal(err)
	}
	if syntax != runtime.ToolHermes || got != want || !strings.Contains(got, "<tools>\n{\"type\": \"function\"") {
		t.Errorf("syntax %s:\n%s", syntax, got)
	}
	// The llama2 built-in has no tool format of its own either.
	l2, err := New(parseKV(t, spmVocab()))
	if err != nil {
		t.Fatal(err)
	}
	got, syntax, err = l2.ToolChatPrompt(toolConversation("call_1")[:4], weatherTools, true)
	if err != nil || syntax != runtime.ToolHermes || !strings.Contains(got, "<tool_response>") {
		t.Errorf("llama2: %v %s %q", err, syntax, got)
	}
}

func TestTojsonLikeTransformers(t *testing.T) {
	tk := withTemplate(t, spmVocab(), `{{ {"b": [1, 2.5, "é<x>'"], "a": none} | tojson }}|{{ [1, 2] | tojson(indent=2) }}|{{ {"z": 1, "y": 2} | tojson(sort_keys=true) }}{{ messages[0].content }}`)
	got, err := tk.ChatPrompt([]runtime.ChatMessage{{Role: "user", Content: ""}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b": [1, 2.5, "é<x>'"], "a": null}|[
  1,
  2
]|{"y": 2, "z": 1}`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
