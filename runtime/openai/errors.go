package openai

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ErrorKind classifies a failed call; results and sample files record it.
type ErrorKind string

// The error kinds.
const (
	KindHTTP        ErrorKind = "http_status"
	KindTransport   ErrorKind = "transport"
	KindTimeout     ErrorKind = "timeout"
	KindBadResponse ErrorKind = "bad_response"
	KindEmpty       ErrorKind = "empty_response"
	KindUnsupported ErrorKind = "unsupported"
)

// Error is a call that failed, after its retries.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status of a KindHTTP error.
	Status int
	// Attempts is how many times the call was sent.
	Attempts int
	Msg      string
}

func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" %d", e.Status)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s + ": " + e.Msg
}

// Retryable reports whether sending the call again may succeed: transport
// failures, timeouts, 408, 429 and 5xx answers.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindTransport, KindTimeout:
		return true
	case KindHTTP:
		return e.Status == 408 || e.Status == 429 || e.Status >= 500
	}
	return false
}

// ErrorMessage extracts the message of an error body: OpenAI's
// {"error":{"message"}}, a flat {"error":"..."} or {"message":"..."}
// (llama.cpp, tt-media-server), else a prefix of the body.
func ErrorMessage(raw []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &env) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(env.Error, &nested) == nil && nested.Message != "" {
			return nested.Message
		}
		var flat string
		if json.Unmarshal(env.Error, &flat) == nil && flat != "" {
			return flat
		}
		if env.Message != "" {
			return env.Message
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
