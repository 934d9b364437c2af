package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Tokenizer uses a server's vLLM-shaped /tokenize and /detokenize endpoints,
// so prompt lengths are measured with the exact tokenizer the server uses.
type Tokenizer struct {
	base   string
	model  string
	header http.Header
	http   *http.Client
}

// NewTokenizer returns a Tokenizer for the server at base serving model.
func NewTokenizer(base, model string, header http.Header) (*Tokenizer, error) {
	b, err := NormalizeBaseURL(base)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{base: b, model: model, header: header, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// Name says which tokenizer this is, for the result file.
func (t *Tokenizer) Name() string { return "server " + t.base + "/tokenize (model " + t.model + ")" }

// Tokenize returns the token ids of text.
func (t *Tokenizer) Tokenize(ctx context.Context, text string, addSpecial bool) ([]int, error) {
	var out struct {
		Tokens []int `json:"tokens"`
	}
	in := map[string]any{"model": t.model, "prompt": text, "add_special_tokens": addSpecial}
	if err := t.post(ctx, "/tokenize", in, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// TokenizeChat returns the token ids of the prompt the server's chat
// template builds for one user message (generation prompt included).
func (t *Tokenizer) TokenizeChat(ctx context.Context, userMessage string) ([]int, error) {
	var out struct {
		Tokens []int `json:"tokens"`
	}
	in := map[string]any{"model": t.model, "messages": []map[string]string{{"role": "user", "content": userMessage}}, "add_generation_prompt": true}
	if err := t.post(ctx, "/tokenize", in, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// Detokenize returns the text of ids.
func (t *Tokenizer) Detokenize(ctx context.Context, ids []int) (string, error) {
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if ids == nil {
		ids = []int{}
	}
	if err := t.post(ctx, "/detokenize", map[string]any{"model": t.model, "tokens": ids}, &out); err != nil {
		return "", err
	}
	if out.Prompt == nil {
		return "", fmt.Errorf("POST %s/detokenize: answer has no \"prompt\" field", t.base)
	}
	return *out.Prompt, nil
}

// CountTokens counts the tokens of generated text (no special tokens).
func (t *Tokenizer) CountTokens(ctx context.Context, text string) (int, error) {
	ids, err := t.Tokenize(ctx, text, false)
	return len(ids), err
}

func (t *Tokenizer) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s%s: %w", t.base, path, err)
	}
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.http.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s%s: %w", t.base, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s%s: %s", t.base, path, httpError(resp))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("POST %s%s: read answer: %w", t.base, path, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s%s: decode answer: %w", t.base, path, err)
	}
	return nil
}

// ModelCard is one entry of GET /v1/models; Runtime and Simulated are
// ttis extensions (absent on other servers).
type ModelCard struct {
	ID          string `json:"id"`
	MaxModelLen int    `json:"max_model_len"`
	Runtime     string `json:"runtime"`
	Simulated   bool   `json:"simulated"`
}

// ListModels returns the models served at base (GET /v1/models).
func ListModels(ctx context.Context, base string, header http.Header) ([]ModelCard, error) {
	b, err := NormalizeBaseURL(base)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s/v1/models: %w", b, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/v1/models: %s", b, httpError(resp))
	}
	var out struct {
		Data []ModelCard `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET %s/v1/models: decode: %w", b, err)
	}
	return out.Data, nil
}
