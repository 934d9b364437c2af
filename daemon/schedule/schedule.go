// Package schedule fires the [[schedule]] entries of units: it computes each
// entry's next activation from its cron calendar, runs the injected workflow
// function when one is due, keeps at most one run per unit going (a firing
// while the unit's previous run is still going is skipped and logged), and
// cancels the runs when its context ends; Wait waits for them, for as long
// as its caller allows. Time comes from an injectable
// clock so tests drive it without sleeping.
package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/units"
)

// RunFunc runs one scheduled workflow against a unit; it should return
// when ctx is cancelled.
type RunFunc func(ctx context.Context, unit *units.Unit, s units.Schedule) error

// Fire describes one schedule entry and its next activation.
type Fire struct {
	Unit     string    `json:"unit"`
	Workflow string    `json:"workflow"`
	Calendar string    `json:"calendar"`
	Timezone string    `json:"timezone,omitempty"`
	Limit    string    `json:"limit"`
	Next     time.Time `json:"next"`
	// Running is true while a run of the entry's unit is going.
	Running bool `json:"running"`
	// LastFire and LastResult describe the entry's previous firing:
	// "started", "ok", "skipped: …" or "failed: …".
	LastFire   time.Time `json:"last_fire,omitzero"`
	LastResult string    `json:"last_result,omitempty"`
}

type entry struct {
	unit  *units.Unit
	sched units.Schedule
	cron  cron.Schedule
	next  time.Time
	last  time.Time
	res   string
}

// key identifies an entry across Set calls, so that re-reading unchanged
// units keeps their next activation.
func (e *entry) key() string {
	s := e.sched
	return strings.Join([]string{e.unit.Name, s.Workflow, s.Calendar, s.Timezone, string(s.Limit)}, "\x00")
}

// Scheduler fires schedule entries. Create it with New, feed it units
// with Set, and run Loop.
type Scheduler struct {
	clock clock.Clock
	run   RunFunc
	log   *slog.Logger

	mu      sync.Mutex
	entries []*entry
	running map[string]bool
	changed chan struct{}
	wg      sync.WaitGroup
}

// New returns a scheduler; a nil clock is the wall clock, a nil logger
// discards.
func New(c clock.Clock, run RunFunc, log *slog.Logger) *Scheduler {
	if c == nil {
		c = clock.Real{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{clock: c, run: run, log: log, running: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// Set replaces the schedule with the entries of us. Disabled units are not
// scheduled. An entry whose calendar does not parse is skipped and
// reported; the others still take effect. Entries that did not change
// keep their next activation.
func (s *Scheduler) Set(us []*units.Unit) []error {
	now := s.clock.Now()
	s.mu.Lock()
	old := map[string]*entry{}
	for _, e := range s.entries {
		old[e.key()] = e
	}
	var errs []error
	var entries []*entry
	for _, u := range us {
		if u == nil || u.Disabled {
			continue
		}
		for i, sc := range u.Schedule {
			c, err := sc.Cron()
			if err != nil {
				errs = append(errs, fmt.Errorf("unit %s: schedule %d: %w", u.Name, i+1, err))
				continue
			}
			e := &entry{unit: u, sched: sc, cron: c}
			if o, ok := old[e.key()]; ok {
				e.next, e.last, e.res = o.next, o.last, o.res
			} else {
				e.next = c.Next(now)
			}
			entries = append(entries, e)
		}
	}
	s.entries = entries
	s.mu.Unlock()
	for _, err := range errs {
		s.log.Warn("schedule ignored", "err", err)
	}
	s.poke()
	return errs
}

func (s *Scheduler) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Next lists every entry with its next activation, soonest first.
func (s *Scheduler) Next() []Fire {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fire, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, Fire{Unit: e.unit.Name, Workflow: e.sched.Workflow, Calendar: e.sched.Calendar, Timezone: e.sched.Timezone,
			Limit: string(e.sched.Limit), Next: e.next, Running: s.running[e.unit.Name], LastFire: e.last, LastResult: e.res})
	}
	slices.SortStableFunc(out, func(a, b Fire) int {
		if c := a.Next.Compare(b.Next); c != 0 {
			return c
		}
		return strings.Compare(a.Unit, b.Unit)
	})
	return out
}

// Loop fires due entries until ctx ends and returns; the runs it started
// see ctx cancelled, and Wait waits for them.
func (s *Scheduler) Loop(ctx context.Context) {
	for {
		deadline := s.fireDue(ctx)
		var timerC <-chan time.Time
		var timer clock.Timer
		if !deadline.IsZero() {
			timer = s.clock.NewTimer(deadline.Sub(s.clock.Now()))
			timerC = timer.C()
			// The clock may have passed the deadline while the timer was
			// being made (a fake clock advanced by a test): go round
			// again rather than wait for a timer set too late.
			if !s.clock.Now().Before(deadline) {
				timer.Stop()
				continue
			}
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-timerC:
		case <-s.changed:
			if timer != nil {
				timer.Stop()
			}
		}
	}
}

// Wait waits, after Loop has returned, until every run Loop started has
// returned or ctx ends, whichever comes first, and returns the units whose
// runs are still going then (sorted). A run should return soon after its
// context ends; one that does not (stuck on something that ignores its
// context) must not keep the daemon from exiting, so the caller bounds
// the wait and reports what it left behind.
func (s *Scheduler) Wait(ctx context.Context) (stuck []string) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for unit := range s.running {
		stuck = append(stuck, unit)
	}
	s.mu.Unlock()
	slices.Sort(stuck)
	return stuck
}

// fireDue starts every due entry and returns the next activation (zero
// when nothing is scheduled). Activations missed while the clock jumped
// (a suspended host) collapse into one firing.
func (s *Scheduler) fireDue(ctx context.Context) time.Time {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var soonest time.Time
	for _, e := range s.entries {
		if !e.next.IsZero() && !e.next.After(now) {
			s.fire(ctx, e, now)
			e.next = e.cron.Next(now)
		}
		if !e.next.IsZero() && (soonest.IsZero() || e.next.Before(soonest)) {
			soonest = e.next
		}
	}
	return soonest
}

// fire starts one entry's run unless its unit already has one going.
// s.mu is held.
func (s *Scheduler) fire(ctx context.Context, e *entry, now time.Time) {
	name := e.unit.Name
	e.last = now
	if s.running[name] {
		e.res = "skipped: the previous run of the unit is still going"
		s.log.Warn("scheduled run skipped: the previous run of the unit is still going", "unit", name, "workflow", e.sched.Workflow, "calendar", e.sched.Calendar)
		return
	}
	s.running[name] = true
	e.res = "started"
	s.log.Info("scheduled run starting", "unit", name, "workflow", e.sched.Workflow, "limit", e.sched.Limit, "calendar", e.sched.Calendar)
	u, sc := e.unit, e.sched
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.run(ctx, u, sc)
		res := "ok"
		if err != nil {
			res = "failed: " + err.Error()
			s.log.Error("scheduled run failed", "unit", name, "workflow", sc.Workflow, "err", err)
		} else {
			s.log.Info("scheduled run finished", "unit", name, "workflow", sc.Workflow)
		}
		s.mu.Lock()
		delete(s.running, name)
		for _, o := range s.entries {
			if o.unit.Name == name && o.sched == sc && o.res == "started" {
				o.res = res
			}
		}
		s.mu.Unlock()
		s.poke()
	}()
}
