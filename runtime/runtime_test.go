package runtime

import (
	"errors"
	"strings"
	"testing"
)

// TestRequestCheck pins the one place the preconditions of Generate are
// checked (the cpu and sim engines call it): each broken one is refused,
// naming what is wrong, and a prompt too long wraps ErrContextLength.
func TestRequestCheck(t *testing.T) {
	const window, vocab = 8, 100
	for _, c := range []struct {
		name string
		req  Request
		want string // "" accepts
	}{
		{"ok", Request{Prompt: []int{0, 99}, MaxTokens: 6}, ""},
		{"a full window, no output", Request{Prompt: make([]int, window)}, ""},
		{"empty", Request{MaxTokens: 1}, "prompt is empty"},
		{"too long", Request{Prompt: make([]int, window+1)}, "9 prompt tokens, context window 8"},
		{"id past the vocabulary", Request{Prompt: []int{1, vocab}}, "prompt token 1: id 100 is outside the vocabulary (0..99)"},
		{"negative id", Request{Prompt: []int{-1}}, "prompt token 0: id -1 is outside"},
		{"negative max_tokens", Request{Prompt: []int{1}, MaxTokens: -1}, "max_tokens must not be negative, got -1"},
	} {
		err := c.req.Check(window, vocab)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if err := (&Request{Prompt: make([]int, window+1)}).Check(window, vocab); !errors.Is(err, ErrContextLength) {
		t.Errorf("a prompt over the window: %v does not wrap ErrContextLength", err)
	}
}
