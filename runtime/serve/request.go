package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ttis-dev/ttis/runtime"
)

// Limits on request fields.
const (
	maxLogprobs  = 20
	maxN         = 128
	maxStops     = 16
	maxStopBytes = 256
)

// genRequest is a decoded, validated completions or chat request.
type genRequest struct {
	chat   bool
	model  string
	stream bool
	// includeUsage asks for the usage chunk before [DONE].
	includeUsage bool
	// Exactly one of promptTexts (strings) or promptIDs is used per prompt;
	// prompts always holds the token ids after tokenization.
	promptTexts  []string
	promptIDs    [][]int
	messages     []runtime.ChatMessage
	addGenPrompt bool
	addSpecial   bool

	n int
	// maxTokens is -1 when the client left it unset.
	maxTokens    int
	maxTokensArg string // which field set it, for error messages
	sampling     runtime.Sampling
	stop         []string
	stopTokenIDs []int
	ignoreEOS    bool
	includeStop  bool
	// logprobs is -1 for none, else the number of alternatives.
	logprobs int
	echo     bool
	// constraint is the structured-output constraint, nil for none.
	constraint *constraintSpec
	// tools are the chat request's tool settings (nil: none); toolTurns
	// says the conversation holds tool calls or results.
	tools     *toolSpec
	toolTurns bool
}

// streamOptions is OpenAI's stream_options object.
type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// samplingBody holds the fields both endpoints share.
type samplingBody struct {
	Model             string             `json:"model"`
	MaxTokens         *int64             `json:"max_tokens"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int64             `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	Seed              *int64             `json:"seed"`
	Stop              json.RawMessage    `json:"stop"`
	StopTokenIDs      []int              `json:"stop_token_ids"`
	N                 *int64             `json:"n"`
	Stream            *bool              `json:"stream"`
	StreamOptions     *streamOptions     `json:"stream_options"`
	IgnoreEOS         *bool              `json:"ignore_eos"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	User              *string            `json:"user"`
	AddSpecialTokens  *bool              `json:"add_special_tokens"`
	IncludeStopStr    *bool              `json:"include_stop_str_in_output"`
	SkipSpecialTokens *bool              `json:"skip_special_tokens"`
	MinTokens         *int64             `json:"min_tokens"`
	LogitBias         map[string]float64 `json:"logit_bias"`
	BestOf            *int64             `json:"best_of"`
	UseBeamSearch     *bool              `json:"use_beam_search"`
	PromptLogprobs    *int64             `json:"prompt_logprobs"`
	ResponseFormat    json.RawMessage    `json:"response_format"`
	structuredBody
	// Accepted and ignored: they do not change results.
	SpacesBetweenSpecialTokens *bool           `json:"spaces_between_special_tokens"`
	Metadata                   json.RawMessage `json:"metadata"`
	Store                      *bool           `json:"store"`
	Priority                   *int64          `json:"priority"`
	RequestID                  *string         `json:"request_id"`
	ServiceTier                *string         `json:"service_tier"`
}

type completionBody struct {
	samplingBody
	Prompt   json.RawMessage `json:"prompt"`
	Echo     *bool           `json:"echo"`
	Logprobs *int64          `json:"logprobs"`
	Suffix   *string         `json:"suffix"`
}

type chatMessageBody struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       *string         `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	// Accepted and ignored: fields of an answer's message that SDKs send
	// back when a client appends that message to the conversation.
	Refusal          json.RawMessage `json:"refusal"`
	Annotations      json.RawMessage `json:"annotations"`
	Audio            json.RawMessage `json:"audio"`
	FunctionCall     json.RawMessage `json:"function_call"`
	Parsed           json.RawMessage `json:"parsed"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
}

type chatBody struct {
	samplingBody
	Messages             []chatMessageBody `json:"messages"`
	MaxCompletionTokens  *int64            `json:"max_completion_tokens"`
	Logprobs             *bool             `json:"logprobs"`
	TopLogprobs          *int64            `json:"top_logprobs"`
	Tools                json.RawMessage   `json:"tools"`
	ToolChoice           json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls    *bool             `json:"parallel_tool_calls"`
	AddGenerationPrompt  *bool             `json:"add_generation_prompt"`
	ContinueFinalMessage *bool             `json:"continue_final_message"`
	ChatTemplate         *string           `json:"chat_template"`
	ChatTemplateKwargs   json.RawMessage   `json:"chat_template_kwargs"`
	Echo                 *bool             `json:"echo"`
}

// decodeJSON decodes body strictly into v, turning decoder errors into
// 400s that name the field.
func decodeJSON(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("", "request body is empty; expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("", "invalid JSON: unexpected data after the top-level object")
	}
	if _, err := dec.Token(); err == nil {
		return badRequest("", "invalid JSON: unexpected data after the top-level object")
	}
	return nil
}

func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		// Fields of embedded structs are reported with their Go names.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "samplingBody."), "structuredBody.")
		if field == "" {
			return badRequest("", "invalid JSON: expected an object, got %s", te.Value)
		}
		return badRequest(field, "%s: wrong type: got %s, want %s", field, te.Value, jsonTypeName(te.Type.Kind().String()))
	case errors.As(err, &se):
		return badRequest("", "invalid JSON at byte %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(name, "unsupported request field %q", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "invalid JSON: unexpected end of input")
	}
	return badRequest("", "invalid JSON: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64":
		return "integer"
	case "float64", "float32":
		return "number"
	case "bool":
		return "boolean"
	case "slice":
		return "array"
	case "struct", "map":
		return "object"
	}
	return kind
}

// decodeCompletion parses a /v1/completions body.
func decodeCompletion(body []byte) (*genRequest, *apiError) {
	var b completionBody
	if e := decodeJSON(body, &b); e != nil {
		return nil, e
	}
	r := &genRequest{model: b.Model, maxTokens: 16, maxTokensArg: "max_tokens", addSpecial: true, logprobs: -1}
	if e := parsePrompt(b.Prompt, r); e != nil {
		return nil, e
	}
	if b.Suffix != nil && *b.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported")
	}
	if b.Echo != nil {
		r.echo = *b.Echo
	}
	if b.Logprobs != nil {
		if *b.Logprobs < 0 || *b.Logprobs > maxLogprobs {
			return nil, badRequest("logprobs", "logprobs must be between 0 and %d, got %d", maxLogprobs, *b.Logprobs)
		}
		r.logprobs = int(*b.Logprobs)
	}
	if e := applySampling(&b.samplingBody, r, b.MaxTokens, "max_tokens"); e != nil {
		return nil, e
	}
	if b.MaxTokens == nil {
		r.maxTokens = 16
	}
	return r, nil
}

// decodeChat parses a /v1/chat/completions body.
func decodeChat(body []byte) (*genRequest, *apiError) {
	var b chatBody
	if e := decodeJSON(body, &b); e != nil {
		return nil, e
	}
	r := &genRequest{chat: true, model: b.Model, maxTokens: -1, addGenPrompt: true, logprobs: -1}
	if len(b.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	calls := map[string]string{} // tool call id -> function, so far
	for i, m := range b.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		case "":
			return nil, badRequest(param+".role", "%s.role is required", param)
		default:
			return nil, badRequest(param+".role", "%s.role %q is not supported (want system, developer, user, assistant or tool)", param, m.Role)
		}
		var text string
		if m.Role != "assistant" || isNull(m.ToolCalls) || !isNull(m.Content) {
			var e *apiError
			if text, e = messageText(m.Content, param+".content"); e != nil {
				return nil, e
			}
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msg := runtime.ChatMessage{Role: role, Content: text}
		if e := toolMessage(&b.Messages[i], &msg, param, calls); e != nil {
			return nil, e
		}
		r.toolTurns = r.toolTurns || role == "tool" || len(msg.ToolCalls) > 0
		r.messages = append(r.messages, msg)
	}
	var e *apiError
	if r.tools, e = parseTools(&b); e != nil {
		return nil, e
	}
	if b.ContinueFinalMessage != nil && *b.ContinueFinalMessage {
		return nil, badRequest("continue_final_message", "continue_final_message is not supported")
	}
	if b.ChatTemplate != nil {
		return nil, badRequest("chat_template", "a per-request chat_template is not supported")
	}
	if len(b.ChatTemplateKwargs) > 0 && !bytes.Equal(bytes.TrimSpace(b.ChatTemplateKwargs), []byte("null")) && !bytes.Equal(bytes.TrimSpace(b.ChatTemplateKwargs), []byte("{}")) {
		return nil, badRequest("chat_template_kwargs", "chat_template_kwargs are not supported")
	}
	if b.Echo != nil && *b.Echo {
		return nil, badRequest("echo", "echo is not supported for chat completions")
	}
	if b.AddGenerationPrompt != nil {
		r.addGenPrompt = *b.AddGenerationPrompt
	}
	if b.AddSpecialTokens != nil {
		r.addSpecial = *b.AddSpecialTokens
	}
	if b.TopLogprobs != nil {
		if *b.TopLogprobs < 0 || *b.TopLogprobs > maxLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs must be between 0 and %d, got %d", maxLogprobs, *b.TopLogprobs)
		}
		if b.Logprobs == nil || !*b.Logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs requires logprobs=true")
		}
	}
	if b.Logprobs != nil && *b.Logprobs {
		r.logprobs = 0
		if b.TopLogprobs != nil {
			r.logprobs = int(*b.TopLogprobs)
		}
	}
	limit, arg := b.MaxCompletionTokens, "max_completion_tokens"
	if limit == nil {
		limit, arg = b.MaxTokens, "max_tokens"
	} else if b.MaxTokens != nil && *b.MaxTokens != *b.MaxCompletionTokens {
		return nil, badRequest("max_tokens", "max_tokens and max_completion_tokens disagree; set one")
	}
	if e := applySampling(&b.samplingBody, r, limit, arg); e != nil {
		return nil, e
	}
	if limit == nil {
		r.maxTokens = -1
	}
	if r.tools != nil {
		if c := r.tools.constraint(); c != nil {
			if r.constraint != nil {
				return nil, badRequest(r.constraint.param, "%s and tool_choice %s both constrain the output; give only one", r.constraint.param, r.tools.choice)
			}
			r.constraint = c
		}
	}
	return r, nil
}

// messageText accepts a string or an array of {"type":"text","text":…}
// parts.
func messageText(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", badRequest(param, "%s is required", param)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(param, "%s: invalid string", param)
		}
		return s, nil
	}
	if raw[0] != '[' {
		return "", badRequest(param, "%s must be a string or an array of text parts", param)
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "%s must be a string or an array of text parts", param)
	}
	var sb strings.Builder
	for i, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d]", param, i), "%s[%d]: only text parts are supported (type %q)", param, i, p.Type)
		}
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(*p.Text)
	}
	return sb.String(), nil
}

// parsePrompt accepts a string, a list of strings, a token-id list or a
// list of token-id lists.
func parsePrompt(raw json.RawMessage, r *genRequest) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return badRequest("prompt", "prompt is required")
	}
	const shape = "prompt must be a string, a list of strings, a list of token ids or a list of token-id lists"
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("prompt", shape)
		}
		r.promptTexts = []string{s}
		return nil
	case '[':
	default:
		return badRequest("prompt", shape)
	}
	// The shape is read from the first element alone: decoding the list
	// into raw items first would cost a copy and a slice header per token
	// id of a long prompt.
	first := bytes.TrimLeft(raw[1:], " \t\r\n")
	if len(first) > 0 && first[0] == ']' {
		return badRequest("prompt", "prompt must not be empty")
	}
	switch {
	case len(first) > 0 && first[0] == '"':
		if err := json.Unmarshal(raw, &r.promptTexts); err != nil {
			return badRequest("prompt", shape)
		}
	case len(first) > 0 && first[0] == '[':
		if err := json.Unmarshal(raw, &r.promptIDs); err != nil {
			return badRequest("prompt", shape)
		}
		if len(r.promptIDs) == 0 {
			return badRequest("prompt", "prompt must not be empty")
		}
		for i, p := range r.promptIDs {
			if len(p) == 0 {
				return badRequest("prompt", "prompt[%d] must not be empty", i)
			}
		}
	default:
		var ids []int
		if err := json.Unmarshal(raw, &ids); err != nil {
			return badRequest("prompt", shape)
		}
		r.promptIDs = [][]int{ids}
	}
	return nil
}

// applySampling validates the shared fields into r.
func applySampling(b *samplingBody, r *genRequest, maxTokens *int64, maxArg string) *apiError {
	r.maxTokensArg = maxArg
	if maxTokens != nil {
		if *maxTokens < 0 {
			return badRequest(maxArg, "%s must not be negative, got %d", maxArg, *maxTokens)
		}
		if *maxTokens > math.MaxInt32 {
			return badRequest(maxArg, "%s %d is too large", maxArg, *maxTokens)
		}
		r.maxTokens = int(*maxTokens)
	}
	s := &r.sampling
	s.Temperature = 1
	s.RepetitionPenalty = 1
	if v := b.Temperature; v != nil {
		if *v < 0 || *v > 2 || math.IsNaN(*v) {
			return badRequest("temperature", "temperature must be between 0 and 2, got %g", *v)
		}
		s.Temperature = float32(*v)
	}
	if v := b.TopP; v != nil {
		if !(*v > 0 && *v <= 1) {
			return badRequest("top_p", "top_p must be in (0, 1], got %g", *v)
		}
		s.TopP = float32(*v)
	}
	if v := b.TopK; v != nil {
		if *v < -1 || *v > math.MaxInt32 {
			return badRequest("top_k", "top_k must be -1 (off), 0 (off) or a positive count, got %d", *v)
		}
		s.TopK = int(*v)
	}
	if v := b.MinP; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return badRequest("min_p", "min_p must be between 0 and 1, got %g", *v)
		}
		s.MinP = float32(*v)
	}
	if v := b.Seed; v != nil {
		s.Seed, s.HasSeed = *v, true
	}
	for _, p := range []struct {
		name string
		v    *float64
		dst  *float32
	}{{"presence_penalty", b.PresencePenalty, &s.PresencePenalty}, {"frequency_penalty", b.FrequencyPenalty, &s.FrequencyPenalty}} {
		if p.v == nil {
			continue
		}
		if !(*p.v >= -2 && *p.v <= 2) {
			return badRequest(p.name, "%s must be between -2 and 2, got %g", p.name, *p.v)
		}
		*p.dst = float32(*p.v)
	}
	if v := b.RepetitionPenalty; v != nil {
		if !(*v > 0 && *v <= 10) {
			return badRequest("repetition_penalty", "repetition_penalty must be in (0, 10], got %g", *v)
		}
		s.RepetitionPenalty = float32(*v)
	}
	r.n = 1
	if v := b.N; v != nil {
		if *v < 1 || *v > maxN {
			return badRequest("n", "n must be between 1 and %d, got %d", maxN, *v)
		}
		r.n = int(*v)
	}
	if e := parseStop(b.Stop, r); e != nil {
		return e
	}
	for i, id := range b.StopTokenIDs {
		if id < 0 {
			return badRequest("stop_token_ids", "stop_token_ids[%d] must not be negative", i)
		}
	}
	r.stopTokenIDs = b.StopTokenIDs
	if b.Stream != nil {
		r.stream = *b.Stream
	}
	if b.StreamOptions != nil {
		if !r.stream {
			return badRequest("stream_options", "stream_options can only be set when stream is true")
		}
		if b.StreamOptions.ContinuousUsageStats != nil && *b.StreamOptions.ContinuousUsageStats {
			return badRequest("stream_options.continuous_usage_stats", "continuous_usage_stats is not supported")
		}
		r.includeUsage = b.StreamOptions.IncludeUsage != nil && *b.StreamOptions.IncludeUsage
	}
	if b.IgnoreEOS != nil {
		r.ignoreEOS = *b.IgnoreEOS
	}
	if b.AddSpecialTokens != nil {
		r.addSpecial = *b.AddSpecialTokens
	}
	if b.IncludeStopStr != nil {
		r.includeStop = *b.IncludeStopStr
	}
	// Fields that would change results and that ttis does not implement.
	switch {
	case b.SkipSpecialTokens != nil && !*b.SkipSpecialTokens:
		return badRequest("skip_special_tokens", "skip_special_tokens=false is not supported")
	case b.MinTokens != nil && *b.MinTokens != 0:
		return badRequest("min_tokens", "min_tokens is not supported")
	case len(b.LogitBias) > 0:
		return badRequest("logit_bias", "logit_bias is not supported")
	case b.BestOf != nil && *b.BestOf != 1:
		return badRequest("best_of", "best_of is not supported")
	case b.UseBeamSearch != nil && *b.UseBeamSearch:
		return badRequest("use_beam_search", "beam search is not supported")
	case b.PromptLogprobs != nil:
		return badRequest("prompt_logprobs", "prompt_logprobs is not supported; use echo=true with logprobs on /v1/completions")
	}
	var e *apiError
	r.constraint, e = parseStructured(b)
	return e
}

func parseStop(raw json.RawMessage, r *genRequest) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var stops []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("stop", "stop must be a string or a list of strings")
		}
		stops = []string{s}
	} else if err := json.Unmarshal(raw, &stops); err != nil {
		return badRequest("stop", "stop must be a string or a list of strings")
	}
	if len(stops) > maxStops {
		return badRequest("stop", "at most %d stop strings are allowed, got %d", maxStops, len(stops))
	}
	for i, s := range stops {
		if s == "" {
			return badRequest("stop", "stop[%d] must not be empty", i)
		}
		if len(s) > maxStopBytes {
			return badRequest("stop", "stop[%d] is longer than %d bytes", i, maxStopBytes)
		}
	}
	r.stop = stops
	return nil
}

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}
