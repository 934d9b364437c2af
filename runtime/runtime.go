// Package runtime defines the contract between a unit's inference server
// (runtime/serve) and the engines that generate tokens behind it (runtime/cpu,
// runtime/sim; runtime/vllm is no Engine: it starts a server that the front
// door forwards to, a serve.Upstream).
//
// The server owns HTTP, auth, admission (max_concurrency slots and a bounded
// wait queue), stop strings, n>1 fan-out, SSE framing and metrics. An Engine
// owns tokenization, the chat template and token generation; it batches every
// sequence it has been handed (continuous batching) and reports each token as
// it is produced.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Engine generates tokens for a unit. Implementations must be safe for
// concurrent use: the server calls Generate from many goroutines at once and
// expects the engine to batch the running sequences together.
type Engine interface {
	// Info describes the served model. It is called often and must be cheap.
	Info() Info
	// Tokenizer returns the engine's tokenizer.
	Tokenizer() Tokenizer
	// Generate starts one sequence and returns its token stream. The engine
	// stops the sequence and closes the stream when ctx is cancelled, when
	// MaxTokens tokens were produced, when a stop token or EOS is sampled
	// (unless IgnoreEOS), or when the context window is full.
	// Errors returned here are request errors (bad prompt, too long).
	Generate(ctx context.Context, req *Request) (*Stream, error)
	// Close releases the engine's resources. In-flight streams end with
	// FinishAbort.
	Close() error
}

// Info describes what an engine serves.
type Info struct {
	// Model is the name clients use in the "model" field.
	Model string
	// Runtime is "cpu", "sim" or "vllm".
	Runtime string
	// Simulated is true for engines whose output is not a real model's
	// (the sim runtime). Every surface that shows results must say so.
	Simulated bool
	// MaxContext is the context window in tokens (prompt plus output).
	MaxContext int
	// Version describes the engine build (shown by GET /version).
	Version string
}

// Tokenizer converts between text and token ids.
type Tokenizer interface {
	// Encode tokenizes text. With addSpecial the tokenizer adds what the
	// model expects around a prompt (BOS for Llama-family models).
	Encode(text string, addSpecial bool) ([]int, error)
	// Decode turns ids back into text. Special tokens (BOS, EOS) are
	// skipped when skipSpecial is true.
	Decode(ids []int, skipSpecial bool) string
	// TokenBytes returns the raw bytes one token stands for, as it appears
	// inside a longer text (a SentencePiece "▁" is a space, a byte-fallback
	// token is its byte). Concatenating TokenBytes of a sequence gives the
	// bytes of Decode without leading-space stripping; the server uses it to
	// detokenize incrementally and to find stop strings.
	TokenBytes(id int) []byte
	// IsSpecial reports whether id is a control token (BOS, EOS, ...).
	IsSpecial(id int) bool
	// EOS returns the ids that end generation.
	EOS() []int
	// VocabSize is the number of token ids.
	VocabSize() int
	// ChatPrompt renders a conversation with the model's chat template,
	// ending with the assistant turn's opening when addGenerationPrompt.
	ChatPrompt(messages []ChatMessage, addGenerationPrompt bool) (string, error)
}

// ChatMessage is one turn of a conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the function calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a "tool" message answers, Name the function
	// that answered (when the client says).
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ToolCall is one function call written by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments object.
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object (nil: none).
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolSyntax names the way a chat template asks the model to write tool
// calls, after the vLLM tool parser that reads it.
type ToolSyntax string

// Tool-call syntaxes.
const (
	// ToolHermes: <tool_call>{"name": …, "arguments": {…}}</tool_call>,
	// one block per call (Qwen 2.5 and 3, Hermes; also ttis's format for
	// templates that do not present tools themselves).
	ToolHermes ToolSyntax = "hermes"
	// ToolLlama3JSON: {"name": …, "parameters": {…}}, calls separated by
	// "; ", optionally after <|python_tag|> (Llama 3.1, 3.2, 3.3).
	ToolLlama3JSON ToolSyntax = "llama3_json"
	// ToolMistral: [TOOL_CALLS] [{"name": …, "arguments": {…}}, …]
	// (Mistral 7B v0.3 and later).
	ToolMistral ToolSyntax = "mistral"
)

// ToolPrompter is implemented by tokenizers whose chat template can
// present tools to the model and render tool calls and their results.
type ToolPrompter interface {
	// ToolChatPrompt renders messages (tool calls and role "tool" results
	// included) and tools with the chat template and reports the syntax
	// the model was asked to write calls in.
	ToolChatPrompt(messages []ChatMessage, tools []Tool, addGenerationPrompt bool) (string, ToolSyntax, error)
}

// TextBounder is implemented by tokenizers that know the most text one
// token can stand for. The server then judges a prompt by its length in
// bytes before tokenizing it: a text of B bytes encodes to at least
// ceil(B / MaxTokenBytes) tokens, so a prompt that cannot fit the context
// window is refused without the work (and memory) of tokenizing it, and
// one that could fit is never refused.
type TextBounder interface {
	// MaxTokenBytes is the most bytes of Encode's input one output token
	// can consume, special tokens written in the text included (at
	// least 1).
	MaxTokenBytes() int
}

// Sampling holds the sampling parameters of one sequence. The zero value is
// greedy decoding with no penalties.
type Sampling struct {
	// Temperature 0 means greedy (argmax).
	Temperature float32
	// TopP in (0,1]; 0 or 1 disables nucleus sampling.
	TopP float32
	// TopK keeps the K most likely tokens; 0 or -1 disables.
	TopK int
	// MinP drops tokens whose probability is below MinP times the top one.
	MinP float32
	// Seed makes sampling reproducible when HasSeed is set.
	Seed    int64
	HasSeed bool
	// PresencePenalty and FrequencyPenalty follow OpenAI's definition over
	// the generated tokens; RepetitionPenalty (1 = off) follows the CTRL /
	// vLLM definition over prompt and generated tokens.
	PresencePenalty   float32
	FrequencyPenalty  float32
	RepetitionPenalty float32
}

// Request is one sequence to generate.
type Request struct {
	// ID identifies the request in logs.
	ID string
	// Prompt is the tokenized prompt (special tokens already added).
	Prompt []int
	// MaxTokens is the most tokens to generate. 0 generates nothing (useful
	// with PromptLogprobs to score a prompt).
	MaxTokens int
	Sampling  Sampling
	// StopTokenIDs end the sequence when sampled (in addition to EOS).
	StopTokenIDs []int
	// IgnoreEOS keeps generating past EOS until MaxTokens.
	IgnoreEOS bool
	// Logprobs asks for the log-probability of each generated token and of
	// the Logprobs most likely alternatives; -1 asks for none.
	Logprobs int
	// PromptLogprobs asks for the same over the prompt tokens (the first
	// prompt token has none); -1 asks for none. Used for echo+logprobs
	// log-likelihood scoring.
	PromptLogprobs int
	// Constraint, when not nil, restricts the tokens the sequence may
	// generate (structured outputs, tool calls). The server makes one per
	// sequence.
	Constraint Constraint
}

// Constraint restricts the tokens one sequence may generate: constrained
// decoding for structured outputs and tool calls. Before sampling each
// token the engine asks Allowed and gives every other token a logit of
// -Inf (reported logprobs stay those of the unconstrained distribution);
// after sampling it calls Accept. Calls come from one goroutine at a
// time.
type Constraint interface {
	// Allowed returns the tokens that may come next as a bitset over the
	// vocabulary: token t is allowed when bits[t/64]>>(t%64)&1 == 1 (ids
	// past the bitset are not). remaining is the most tokens, this one
	// included, the sequence may still generate (its max_tokens or context
	// window), so that the output can be finished in time. The bitset is
	// never empty (EOS only, once the output is complete) and the engine
	// must not modify it.
	Allowed(remaining int) ([]uint64, error)
	// Accept records the sampled token. An error (the token was not
	// allowed, or the constraint ran into a limit) ends the sequence with
	// FinishAbort and that error.
	Accept(id int) error
}

// TokenLogprob is a token id with its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float32
}

// Token is one generated token.
type Token struct {
	ID int
	// Logprob of ID under the model's (temperature-free) distribution, when
	// Request.Logprobs >= 0.
	Logprob float32
	// Top holds the most likely alternatives, when Request.Logprobs > 0.
	Top []TokenLogprob
	// Time is when the engine produced the token.
	Time time.Time
}

// FinishReason says why a sequence ended.
type FinishReason int

// Finish reasons. FinishStop covers EOS and stop tokens, FinishLength the
// token limit and a full context window, FinishAbort cancellation and engine
// shutdown.
const (
	FinishNone FinishReason = iota
	FinishStop
	FinishLength
	FinishAbort
)

// String returns the OpenAI name of the reason.
func (r FinishReason) String() string {
	switch r {
	case FinishStop:
		return "stop"
	case FinishLength:
		return "length"
	case FinishAbort:
		return "abort"
	}
	return ""
}

// ErrContextLength is returned by Generate when the prompt does not fit the
// context window.
var ErrContextLength = errors.New("prompt exceeds the model's context window")
