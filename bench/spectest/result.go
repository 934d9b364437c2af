package spectest

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Result is one test's outcome, with the evidence it rests on.
type Result struct {
	Name        string `json:"name"`
	Template    string `json:"template"`
	Description string `json:"description"`
	Upstream    string `json:"upstream,omitempty"`
	Required    bool   `json:"required"`
	// Verdict is PASS or FAIL; empty when the test did not run.
	Verdict Verdict `json:"verdict,omitempty"`
	// NotRun says why the test did not run.
	NotRun string `json:"not_run,omitempty"`
	// Summary says in one line what was found.
	Summary string `json:"summary"`
	// Evidence holds the checks made: failures first, then a few that
	// passed, each truncated (MaxEvidence, MaxField).
	Evidence []Evidence `json:"evidence"`
	// Requests and Failed count the requests the test sent and those
	// that did not answer as the test expected.
	Requests  int     `json:"requests"`
	Failed    int     `json:"failed_requests"`
	DurationS float64 `json:"duration_s"`
}

// Evidence is one check of a test: what was sent, what was expected and
// what came back.
type Evidence struct {
	Check    string `json:"check"`
	Request  string `json:"request,omitempty"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	Pass     bool   `json:"pass"`
}

// Bounds on what a result keeps: evidence items per test and characters
// per field, so that a report stays readable when a server answers with a
// megabyte.
const (
	MaxEvidence = 12
	MaxField    = 400
)

// Truncate shortens s to at most n bytes on a rune boundary, saying how
// much was left out.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	var b strings.Builder
	b.WriteString(s[:cut])
	b.WriteString("… (")
	b.WriteString(strconv.Itoa(len(s) - cut))
	b.WriteString(" more bytes)")
	return b.String()
}

// ServerState is what a daemon knows of a unit's server process: its
// automatic restarts and its pid.
type ServerState struct {
	Restarts int
	PID      int
}

// Observer reads a unit's ServerState (from ttisd's control API, or its
// own state inside the daemon). A --url target has none: restarts are not
// observable there.
type Observer func(ctx context.Context) (ServerState, error)
