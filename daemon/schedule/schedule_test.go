package schedule

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/units"
)

// regexp2's clock goroutine (the eval filters' match timeouts) ends on its
// own once no deadline is pending; it is the library's, not a leak of ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}

func unit(name string, disabled bool, scheds ...units.Schedule) *units.Unit {
	return &units.Unit{Name: name, Disabled: disabled, Schedule: scheds}
}

func every5(workflow string) units.Schedule {
	return units.Schedule{Workflow: workflow, Calendar: "*/5 * * * *", Limit: "smoke"}
}

// call is one invocation of the fake workflow.
type call struct {
	unit, workflow string
	release        chan error
	ctx            context.Context
}

type recorder struct {
	calls chan *call
}

func newRecorder() *recorder { return &recorder{calls: make(chan *call, 16)} }

func (r *recorder) run(ctx context.Context, u *units.Unit, s units.Schedule) error {
	c := &call{unit: u.Name, workflow: s.Workflow, release: make(chan error), ctx: ctx}
	r.calls <- c
	select {
	case err := <-c.release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *recorder) next(t *testing.T) *call {
	t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no scheduled run started")
		return nil
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-r.calls:
		t.Fatalf("unexpected run of %s (%s)", c.unit, c.workflow)
	case <-time.After(50 * time.Millisecond):
	}
}

// start runs the loop on a fake clock at 00:00:30 with us scheduled.
func start(t *testing.T, us ...*units.Unit) (*Scheduler, *clock.Fake, *recorder, func()) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 2, 0, 0, 30, 0, time.UTC))
	rec := newRecorder()
	s := New(clk, rec.run, nil)
	if errs := s.Set(us); len(errs) > 0 {
		t.Fatal(errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Loop(ctx); close(done) }()
	if !clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("the loop armed no timer")
	}
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Loop did not return after cancel")
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		if stuck := s.Wait(wctx); len(stuck) > 0 {
			t.Fatalf("runs of %v did not return after cancel", stuck)
		}
	}
	return s, clk, rec, stop
}

// waitFor polls cond (bounded) while the loop catches up.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestFiresOnCalendar(t *testing.T) {
	s, clk, rec, stop := start(t, unit("a", false, every5("release")))
	defer stop()
	if got := s.Next(); len(got) != 1 || !got[0].Next.Equal(time.Date(2026, 1, 2, 0, 5, 0, 0, time.UTC)) {
		t.Fatalf("Next = %+v, want 00:05", got)
	}
	clk.Advance(4 * time.Minute) // 00:04:30
	rec.none(t)
	clk.Advance(30 * time.Second) // 00:05:00
	c := rec.next(t)
	if c.unit != "a" || c.workflow != "release" {
		t.Errorf("run = %s %s", c.unit, c.workflow)
	}
	waitFor(t, "next activation 00:10", func() bool {
		n := s.Next()
		return n[0].Running && n[0].Next.Equal(time.Date(2026, 1, 2, 0, 10, 0, 0, time.UTC))
	})
	c.release <- nil
	waitFor(t, "result ok", func() bool { n := s.Next(); return !n[0].Running && n[0].LastResult == "ok" })

	clk.Advance(5 * time.Minute) // 00:10
	c = rec.next(t)
	c.release <- errors.New("server down")
	waitFor(t, "result failed", func() bool { return strings.HasPrefix(s.Next()[0].LastResult, "failed: server down") })
}

func TestSkipsWhileUnitBusy(t *testing.T) {
	hourly := units.Schedule{Workflow: "evals", Calendar: "0 * * * *", Limit: "smoke"}
	s, clk, rec, stop := start(t, unit("a", false, every5("benchmarks"), hourly), unit("b", false, every5("benchmarks")))
	defer stop()
	clk.Advance(4*time.Minute + 30*time.Second) // 00:05: a and b fire together
	got := map[string]*call{}
	for i := 0; i < 2; i++ {
		c := rec.next(t)
		got[c.unit] = c
	}
	if got["a"] == nil || got["b"] == nil {
		t.Fatalf("runs = %v, want a and b in parallel", got)
	}
	got["b"].release <- nil
	waitFor(t, "b's run to end", func() bool {
		for _, f := range s.Next() {
			if f.Unit == "b" {
				return !f.Running
			}
		}
		return false
	})
	clk.Advance(5 * time.Minute) // 00:10: a still busy, b fires again
	c := rec.next(t)
	if c.unit != "b" {
		t.Fatalf("run of %s, want b", c.unit)
	}
	c.release <- nil
	rec.none(t)
	waitFor(t, "a's firing skipped", func() bool {
		for _, f := range s.Next() {
			if f.Unit == "a" && f.Workflow == "benchmarks" && strings.HasPrefix(f.LastResult, "skipped") {
				return true
			}
		}
		return false
	})
	got["a"].release <- nil
}

func TestCancelStopsRuns(t *testing.T) {
	_, clk, rec, stop := start(t, unit("a", false, every5("release")))
	clk.Advance(5 * time.Minute)
	c := rec.next(t)
	stop() // returns only after the run saw the cancellation
	if c.ctx.Err() == nil {
		t.Error("the run's context is not cancelled")
	}
}

// A run stuck on something that ignores its context does not keep Wait
// (and so the daemon) from returning once its caller's deadline passes;
// Wait names the unit it leaves behind.
func TestWaitGivesUpOnStuckRun(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 0, 0, 30, 0, time.UTC))
	started, unstick := make(chan struct{}), make(chan struct{})
	s := New(clk, func(context.Context, *units.Unit, units.Schedule) error {
		close(started)
		<-unstick // deaf to its context
		return nil
	}, nil)
	s.Set([]*units.Unit{unit("a", false, every5("release"))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Loop(ctx); close(done) }()
	if !clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("the loop armed no timer")
	}
	clk.Advance(5 * time.Minute)
	<-started
	cancel()
	<-done
	// The deadline has passed already: the stuck run is reported at once.
	wctx, wcancel := context.WithCancel(context.Background())
	wcancel()
	if stuck := s.Wait(wctx); len(stuck) != 1 || stuck[0] != "a" {
		t.Errorf("Wait = %v, want [a]", stuck)
	}
	close(unstick)
	wctx, wcancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if stuck := s.Wait(wctx); len(stuck) != 0 {
		t.Errorf("Wait after the run returned = %v", stuck)
	}
}

func TestSet(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 0, 0, 30, 0, time.UTC))
	s := New(clk, newRecorder().run, nil)
	errs := s.Set([]*units.Unit{
		unit("a", false, every5("release"), units.Schedule{Workflow: "evals", Calendar: "61 * * * *"}),
		unit("off", true, every5("release")),
		unit("tz", false, units.Schedule{Workflow: "benchmarks", Calendar: "0 2 * * *", Timezone: "Asia/Tokyo"}),
	})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "unit a: schedule 2") {
		t.Errorf("errors = %v, want one for a's second entry", errs)
	}
	got := s.Next()
	if len(got) != 2 || got[0].Unit != "a" || got[1].Unit != "tz" {
		t.Fatalf("Next = %+v, want a then tz (disabled unit not scheduled)", got)
	}
	// 02:00 in Tokyo is 17:00 UTC the previous day; the next one after
	// 00:00:30 UTC is 17:00 UTC on Jan 2.
	if want := time.Date(2026, 1, 2, 17, 0, 0, 0, time.UTC); !got[1].Next.Equal(want) {
		t.Errorf("tz next = %v, want %v", got[1].Next, want)
	}
	// Re-setting unchanged units keeps their activation even after the
	// clock moved; a changed calendar is recomputed.
	clk.Advance(3 * time.Minute)
	s.Set([]*units.Unit{unit("a", false, every5("release")), unit("tz", false, units.Schedule{Workflow: "benchmarks", Calendar: "*/2 * * * *"})})
	got = s.Next()
	if !got[0].Next.Equal(time.Date(2026, 1, 2, 0, 4, 0, 0, time.UTC)) || !got[1].Next.Equal(time.Date(2026, 1, 2, 0, 5, 0, 0, time.UTC)) {
		t.Errorf("after Set: %+v", got)
	}
	s.Set(nil)
	if len(s.Next()) != 0 {
		t.Error("Set(nil) kept entries")
	}
}

func TestLoopWithNothingScheduled(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	rec := newRecorder()
	s := New(clk, rec.run, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Loop(ctx) }()
	// Units appear later: the loop picks them up.
	s.Set([]*units.Unit{unit("late", false, every5("evals"))})
	if !clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no timer after Set")
	}
	clk.Advance(5 * time.Minute)
	c := rec.next(t)
	c.release <- nil
	cancel()
	wg.Wait()
}
