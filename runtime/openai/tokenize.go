package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// TokenizerAPI is the shape of a server's /tokenize and /detokenize.
type TokenizerAPI string

// The two shapes in the wild.
const (
	// TokenizerVLLM: {"model","prompt"|"messages","add_special_tokens"} →
	// {"tokens"}, and /detokenize → {"prompt"} (vLLM, ttis).
	TokenizerVLLM TokenizerAPI = "vllm"
	// TokenizerLlamaCpp: {"content","add_special"} → {"tokens"}, and
	// /detokenize → {"content"} (llama.cpp's server; chat prompts are
	// rendered by its /apply-template first).
	TokenizerLlamaCpp TokenizerAPI = "llama.cpp"
)

// Tokenizer uses a server's own tokenizer endpoints, so that lengths are
// measured with the exact tokenizer the server uses. It finds out on its
// first call which shape the server speaks (vLLM's, else llama.cpp's) and
// keeps to it; API says which.
type Tokenizer struct {
	c     *Client
	model string

	mu  sync.Mutex
	api TokenizerAPI
}

// Tokenizer returns the server's tokenizer for model.
func (c *Client) Tokenizer(model string) *Tokenizer { return &Tokenizer{c: c, model: model} }

// API is the endpoint shape in use ("" before the first call succeeded).
func (t *Tokenizer) API() TokenizerAPI {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.api
}

// Name says which tokenizer this is, for result files.
func (t *Tokenizer) Name() string {
	s := "server " + t.c.base + "/tokenize (model " + t.model
	if api := t.API(); api != "" {
		s += ", " + string(api) + " API"
	}
	return s + ")"
}

type tokens struct {
	Tokens *[]int `json:"tokens"`
}

// Tokenize returns the token ids of text; with addSpecial the server adds
// what the model expects around a prompt (BOS).
func (t *Tokenizer) Tokenize(ctx context.Context, text string, addSpecial bool) ([]int, error) {
	vllm := map[string]any{"model": t.model, "prompt": text, "add_special_tokens": addSpecial}
	llama := map[string]any{"content": text, "add_special": addSpecial}
	return t.tokenize(ctx, text != "", vllm, llama)
}

// TokenizeChat returns the token ids of the prompt the server's chat
// template builds for one user message, generation prompt included.
func (t *Tokenizer) TokenizeChat(ctx context.Context, userMessage string) ([]int, error) {
	msgs := []map[string]string{{"role": "user", "content": userMessage}}
	api := t.API()
	if api == TokenizerLlamaCpp {
		return t.llamaChat(ctx, msgs)
	}
	ids, err := t.post(ctx, map[string]any{"model": t.model, "messages": msgs, "add_generation_prompt": true}, true)
	if err == nil {
		t.settle(TokenizerVLLM)
		return ids, nil
	}
	if api != "" || !otherShape(err) {
		return nil, err
	}
	ids, err2 := t.llamaChat(ctx, msgs)
	if err2 != nil {
		return nil, fmt.Errorf("%w (llama.cpp shape: %v)", err, err2)
	}
	return ids, nil
}

// llamaChat renders the conversation with llama.cpp's /apply-template and
// tokenizes the result as its chat endpoint does (special tokens added).
func (t *Tokenizer) llamaChat(ctx context.Context, msgs []map[string]string) ([]int, error) {
	raw, err := t.c.PostJSON(ctx, "/apply-template", map[string]any{"messages": msgs})
	if err != nil {
		return nil, fmt.Errorf("render chat prompt: %w", err)
	}
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Prompt == nil {
		return nil, fmt.Errorf("POST %s/apply-template: answer has no \"prompt\"", t.c.base)
	}
	return t.Tokenize(ctx, *out.Prompt, true)
}

// errNoTokens is a tokenizer that answered with nothing for a non-empty
// text: llama.cpp's server answers a vLLM-shaped request so, since it reads
// "content", not "prompt".
var errNoTokens = errors.New("server tokenizer returned no tokens for a non-empty text")

// tokenize sends the vLLM-shaped body, or llama.cpp's once known; an
// unknown server that refuses the first or answers it with no tokens gets
// the other shape, and the one that works is kept.
func (t *Tokenizer) tokenize(ctx context.Context, nonEmpty bool, vllm, llama map[string]any) ([]int, error) {
	api := t.API()
	if api == TokenizerLlamaCpp {
		return t.post(ctx, llama, nonEmpty)
	}
	ids, err := t.post(ctx, vllm, nonEmpty)
	if err == nil {
		if nonEmpty {
			// An empty text says nothing about the shape.
			t.settle(TokenizerVLLM)
		}
		return ids, nil
	}
	if api != "" || !otherShape(err) {
		return nil, err
	}
	ids, err2 := t.post(ctx, llama, nonEmpty)
	if err2 != nil {
		return nil, fmt.Errorf("%w (llama.cpp shape: %v)", err, err2)
	}
	t.settle(TokenizerLlamaCpp)
	return ids, nil
}

// otherShape reports whether a failed call may work in the other shape:
// the server refused the body, or answered it with no tokens.
func otherShape(err error) bool {
	var oe *Error
	return errors.Is(err, errNoTokens) || (errors.As(err, &oe) && oe.Kind == KindHTTP && oe.Status >= 400 && oe.Status < 500)
}

func (t *Tokenizer) settle(api TokenizerAPI) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.api == "" {
		t.api = api
	}
}

func (t *Tokenizer) post(ctx context.Context, body map[string]any, nonEmpty bool) ([]int, error) {
	raw, err := t.c.PostJSON(ctx, "/tokenize", body)
	if err != nil {
		return nil, err
	}
	var out tokens
	if err := json.Unmarshal(raw, &out); err != nil || out.Tokens == nil {
		return nil, fmt.Errorf("POST %s/tokenize: answer has no \"tokens\" list", t.c.base)
	}
	if nonEmpty && len(*out.Tokens) == 0 {
		return nil, errNoTokens
	}
	return *out.Tokens, nil
}

// Detokenize returns the text of ids.
func (t *Tokenizer) Detokenize(ctx context.Context, ids []int) (string, error) {
	if ids == nil {
		ids = []int{}
	}
	body := map[string]any{"model": t.model, "tokens": ids}
	if t.API() == TokenizerLlamaCpp {
		body = map[string]any{"tokens": ids}
	}
	raw, err := t.c.PostJSON(ctx, "/detokenize", body)
	if err != nil {
		return "", err
	}
	var out struct {
		Prompt  *string `json:"prompt"`
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("POST %s/detokenize: decode answer: %w", t.c.base, err)
	}
	switch {
	case out.Prompt != nil:
		return *out.Prompt, nil
	case out.Content != nil:
		return *out.Content, nil
	}
	return "", fmt.Errorf("POST %s/detokenize: answer has neither \"prompt\" nor \"content\"", t.c.base)
}

// CountTokens counts the tokens of generated text (no special tokens).
func (t *Tokenizer) CountTokens(ctx context.Context, text string) (int, error) {
	ids, err := t.Tokenize(ctx, text, false)
	return len(ids), err
}
