package client

import (
	"errors"
	"testing"

	"github.com/ttis-dev/ttis/daemon/api"
)

func TestBaseURL(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"0.0.0.0:8000", "http://127.0.0.1:8000"},
		{":8000", "http://127.0.0.1:8000"},
		{"[::]:8000", "http://[::1]:8000"},
		{"localhost:9", "http://localhost:9"},
		{"[::1]:7", "http://[::1]:7"},
	}
	for _, tt := range tests {
		got, err := BaseURL(tt.listen)
		if err != nil || got != tt.want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", tt.listen, got, err, tt.want)
		}
	}
	if _, err := BaseURL("no-port"); err == nil {
		t.Error("BaseURL without a port succeeded")
	}
}

func TestErrorPredicates(t *testing.T) {
	nf := &Error{Status: 404, Code: api.CodeNotFound, Message: "no such unit"}
	if !IsNotFound(nf) || IsNotFound(&Error{Code: api.CodeConflict}) || IsNotFound(errors.New("x")) {
		t.Error("IsNotFound")
	}
	un := &UnreachableError{Socket: "/s", Err: errors.New("refused")}
	if !IsUnreachable(un) || IsUnreachable(nf) {
		t.Error("IsUnreachable")
	}
	if got := un.Error(); got != "cannot reach ttisd at /s: is it running? (refused)" {
		t.Errorf("message %q", got)
	}
}
