package client

import (
	"errors"
	"testing"

	"github.com/ttis-dev/ttis/daemon/api"
)

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
