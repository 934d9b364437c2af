// Package openai is the OpenAI-compatible protocol as both sides of ttis
// speak it: the wire types the front door (runtime/serve) serves and every
// client reads, and the one HTTP client that bench, evalsuite, the release
// workflow and ttisctl use to talk to a server under test (ours, vLLM or
// llama.cpp's server). The client owns what all of them need alike: base URL
// normalisation, auth headers, retries with back-off, the retry of a request
// whose kept-alive connection the server had closed, model listing, the
// tokenizer endpoints of both vLLM and llama.cpp, and a lean SSE reader.
// What a caller does with the answers (timing tokens, scoring samples) stays
// with the caller.
package openai

import (
	"fmt"
	"strings"
)

// API selects the generation endpoint.
type API string

// The generation endpoints.
const (
	Completions API = "completions"
	Chat        API = "chat"
)

// ParseAPI accepts "completions" or "chat", the endpoint paths, and the
// backend names vLLM's benchmark uses ("openai", "openai-chat").
func ParseAPI(s string) (API, error) {
	switch strings.TrimSpace(s) {
	case "", "completions", "/v1/completions", "openai":
		return Completions, nil
	case "chat", "/v1/chat/completions", "openai-chat":
		return Chat, nil
	}
	return "", fmt.Errorf("endpoint %q: want completions or chat", s)
}

// Path is the endpoint's URL path.
func (a API) Path() string {
	if a == Chat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// Backend is the name vLLM's benchmark records for the endpoint.
func (a API) Backend() string {
	if a == Chat {
		return "openai-chat"
	}
	return "openai"
}

// ModelCard is one entry of GET /v1/models. Runtime and Simulated are ttis
// extensions; other servers leave them out.
type ModelCard struct {
	ID          string   `json:"id"`
	Object      string   `json:"object"`
	Created     int64    `json:"created"`
	OwnedBy     string   `json:"owned_by"`
	Root        string   `json:"root"`
	Parent      *string  `json:"parent"`
	MaxModelLen int      `json:"max_model_len"`
	Permission  []string `json:"permission"`
	Runtime     string   `json:"runtime"`
	Simulated   bool     `json:"simulated"`
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelCard `json:"data"`
}

// Pick returns the card of model in cards, or the first card when model is
// empty; ok is false when there is no such card.
func Pick(cards []ModelCard, model string) (card ModelCard, ok bool) {
	for _, c := range cards {
		if c.ID == model {
			return c, true
		}
	}
	if model == "" && len(cards) > 0 {
		return cards[0], true
	}
	return ModelCard{}, false
}

// Usage is the token accounting of a response.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Logprobs is the legacy completions logprobs object (also what echo with
// logprobs returns for the prompt).
type Logprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// CompletionResponse is a non-streamed /v1/completions answer. Text is a
// pointer so that a missing field is told from an empty one.
type CompletionResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int       `json:"index"`
		Text         *string   `json:"text"`
		Logprobs     *Logprobs `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

// ChatResponse is a non-streamed /v1/chat/completions answer.
type ChatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}
