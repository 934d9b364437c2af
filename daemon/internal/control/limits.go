package control

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Kind is a class of control request with its own concurrency limit, so
// that a flood of one kind never starves the others: a thousand `logs -f`
// streams leave `status` answerable, and neither waits for the other.
type Kind int

const (
	// KindQuery reads state: info, units, a unit's status, devices, logs
	// without -f. It answers at once.
	KindQuery Kind = iota
	// KindAction changes state and waits for it: start, stop, restart
	// (a unit's server stopping and starting) and reload (a pass over the
	// units folder). Workflows and operators send these.
	KindAction
	// KindFollow is `logs -f`: a stream that stays open as long as the
	// client wants.
	KindFollow
	kinds
)

// kindNames name each kind in answers and in ttisd.toml.
var kindNames = [kinds]struct{ what, key string }{
	KindQuery:  {"status queries", "max_queries"},
	KindAction: {"unit actions", "max_actions"},
	KindFollow: {"log followers", "max_followers"},
}

func (k Kind) String() string { return kindNames[k].what }

// kindOf classifies a request by its method and route.
func kindOf(r *http.Request) Kind {
	switch {
	case r.Method == http.MethodPost:
		return KindAction
	case strings.HasSuffix(r.URL.Path, "/logs") && r.URL.Query().Get("follow") == "true":
		return KindFollow
	}
	return KindQuery
}

// Limits bound what the control socket serves at once. A zero field means
// no limit (tests of other things); ttisd always sets every field, from
// ttisd.toml's [control] table sized by Size.
type Limits struct {
	// Connections caps open connections, idle ones included; past it a
	// connection is answered 503 and closed (see Listener).
	Connections int
	// Followers, Actions and Queries cap the requests of each kind in
	// progress; past its cap a request is answered 503 and its connection
	// closed.
	Followers int
	Actions   int
	Queries   int
}

func (l Limits) of(k Kind) int {
	switch k {
	case KindAction:
		return l.Actions
	case KindFollow:
		return l.Followers
	}
	return l.Queries
}

// rejectSlots is how many connections past the cap are answered at once;
// further ones are closed unanswered. It bounds the descriptors that
// answering costs.
const rejectSlots = 32

// minConnections is what the control socket keeps however low the
// descriptor limit: ttisctl must always be able to reach the daemon.
const minConnections = 16

// Size fits want into a process whose descriptor limit (RLIMIT_NOFILE,
// soft) is nofile, keeping reserve descriptors for the supervisor's own
// work (health probes, server starts and their output files, scheduled
// runs): Connections + rejectSlots + reserve <= nofile. When the limit
// leaves fewer connections than wanted, every kind shrinks in the same
// proportion (never below 1), and note says what was cut and why, for the
// daemon's log.
func Size(want Limits, nofile uint64, reserve int) (got Limits, note string) {
	got = want
	avail := int64(min(nofile, 1<<31)) - int64(reserve) - rejectSlots
	if want.Connections <= 0 || avail >= int64(want.Connections) {
		return got, ""
	}
	got.Connections = int(max(avail, minConnections))
	scale := func(n int) int {
		if n <= 0 {
			return n
		}
		return max(1, int(int64(n)*int64(got.Connections)/int64(want.Connections)))
	}
	got.Followers, got.Actions, got.Queries = scale(want.Followers), scale(want.Actions), scale(want.Queries)
	note = fmt.Sprintf("the descriptor limit (RLIMIT_NOFILE %d) less control.fd_reserve (%d) leaves the control socket %d connections, not the %d of control.max_connections; followers %d, actions %d, queries %d (raise LimitNOFILE)",
		nofile, reserve, got.Connections, want.Connections, got.Followers, got.Actions, got.Queries)
	if avail < minConnections {
		note += fmt.Sprintf("; the supervisor keeps only %d descriptors", max(0, int64(min(nofile, 1<<31))-int64(got.Connections)-rejectSlots))
	}
	return got, note
}

// gate counts the requests of one kind in progress against its limit.
// It never waits: a full gate refuses at once.
type gate struct {
	kind Kind
	max  int64 // <= 0: no limit
	n    atomic.Int64
}

func (g *gate) enter() bool {
	if n := g.n.Add(1); g.max > 0 && n > g.max {
		g.n.Add(-1)
		return false
	}
	return true
}

func (g *gate) leave() { g.n.Add(-1) }

// refusal is the message of a request refused by a full gate: the kind,
// the limit and the key that sets it.
func (g *gate) refusal() string {
	return fmt.Sprintf("ttisd is serving its limit of %d %s at once (control.%s in ttisd.toml); try again later", g.max, g.kind, kindNames[g.kind].key)
}

// slot is a request's place in its kind's gate. A handler whose work
// outlives it (a log stream) keeps the slot and releases it when done.
type slot struct {
	g    *gate
	kept bool
}

type slotKey struct{}

// keep hands the slot over: release no longer frees it; the returned func
// does.
func (sl *slot) keep() func() {
	sl.kept = true
	return sl.g.leave
}

func (sl *slot) release() {
	if !sl.kept {
		sl.g.leave()
	}
}
