package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ttis-dev/ttis/daemon/internal/change"
	"github.com/ttis-dev/ttis/units"
)

// Kind is what an Action does to a unit.
type Kind int

const (
	// Keep records a new text that means the same (comments, formatting,
	// or a disabled unit's fields): nothing runs differently.
	Keep Kind = iota
	// Retune hands the supervisor a new spec; only daemon-side fields
	// changed, so the server is not touched.
	Retune
	// Reload writes the new snapshot and tells the server to re-read it
	// (SIGHUP): only fields the server takes live changed.
	Reload
	// Restart replaces the server: a field that shapes it changed.
	Restart
	// Start runs the unit: it is new, enabled again, valid for the first
	// time, or restored from the state folder with no server running.
	Start
	// Stop stops the unit's server (disabled); its supervisor stays.
	Stop
	// Remove stops the unit's server and forgets the unit (file gone).
	Remove
	// Invalid records that the unit's current text is broken; the good
	// version, if any, keeps running.
	Invalid
)

var kindNames = [...]string{Keep: "keep", Retune: "retune", Reload: "reload", Restart: "restart", Start: "start", Stop: "stop", Remove: "remove", Invalid: "invalid"}

// String returns the kind's name, as the control API spells it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// stops reports whether the action ends a server (these run first, so
// the chips and ports they free are there for the starts).
func (k Kind) stops() bool { return k == Stop || k == Remove }

// Current is what the reconciler holds for one unit, as Plan sees it.
type Current struct {
	// Good is the version that runs, or would run; nil when the unit never
	// had a valid version.
	Good *units.Unit
	// Hash is the hash of the file text Good was read from; empty when it
	// is unknown (a version restored from the state folder).
	Hash string
	// Supervised is true when the unit has a supervisor (it runs, or ran
	// and was stopped).
	Supervised bool
	// Broken is true while the file's newest text is invalid (its error
	// shows in status): a file put back to the running text must clear it.
	Broken bool
}

// Action is one step of a plan.
type Action struct {
	Kind Kind
	Name string
	// File is the unit file read this pass; nil for Remove, and for the
	// Start of a last good version whose file is now broken.
	File *units.File
	// Unit is the version the action installs (Keep, Retune, Reload,
	// Restart, Start, Stop); nil otherwise.
	Unit *units.Unit
	// Diff is what changed against the good version.
	Diff change.Diff
}

// Plan compares what runs (cur, by unit name) with the units folder as
// just read (files, one per unit file) and returns the actions that make
// them match: stops and removals first, then the rest, each group in name
// order. It does no I/O.
func Plan(cur map[string]Current, files []*units.File) []Action {
	var out []Action
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Name] = true
		out = append(out, planFile(cur[f.Name], f)...)
	}
	for name := range cur {
		if !seen[name] {
			out = append(out, Action{Kind: Remove, Name: name})
		}
	}
	slices.SortStableFunc(out, func(a, b Action) int {
		if a.Kind.stops() != b.Kind.stops() {
			if a.Kind.stops() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func planFile(c Current, f *units.File) []Action {
	if f.Unit == nil {
		acts := []Action{{Kind: Invalid, Name: f.Name, File: f}}
		// A unit restored from the state folder whose file broke while
		// no daemon ran: its last good version runs.
		if c.Good != nil && !c.Good.Disabled && !c.Supervised {
			acts = append(acts, Action{Kind: Start, Name: f.Name, Unit: c.Good})
		}
		return acts
	}
	a := Action{Name: f.Name, File: f, Unit: f.Unit}
	if c.Good == nil {
		a.Kind = Start
		if f.Unit.Disabled {
			a.Kind = Keep
		}
		return []Action{a}
	}
	if f.Hash == c.Hash && (c.Supervised || c.Good.Disabled) {
		if c.Broken {
			// Put back as it runs after a broken edit: nothing to do
			// to the server, but the error must go.
			return []Action{{Kind: Keep, Name: f.Name, File: f, Unit: f.Unit}}
		}
		return nil
	}
	a.Diff = change.Between(c.Good, f.Unit)
	switch {
	case f.Unit.Disabled && !c.Good.Disabled && c.Supervised:
		a.Kind = Stop
	case f.Unit.Disabled:
		a.Kind = Keep
	case c.Good.Disabled || !c.Supervised:
		a.Kind = Start
	case a.Diff.Effect == change.Restart:
		a.Kind = Restart
	case a.Diff.Effect == change.Live:
		a.Kind = Reload
	case a.Diff.Effect == change.Daemon:
		a.Kind = Retune
	default:
		a.Kind = Keep
	}
	return []Action{a}
}
