package clock

import (
	"testing"
	"time"
)

func TestFakeTimers(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a := f.NewTimer(time.Second)
	b := f.NewTimer(3 * time.Second)
	if !f.WaitForTimers(2, time.Second) {
		t.Fatal("timers not registered")
	}
	f.Advance(time.Second)
	select {
	case got := <-a.C():
		if !got.Equal(start.Add(time.Second)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("a did not fire")
	}
	if !b.Stop() {
		t.Fatal("Stop of pending timer = false")
	}
	f.Advance(time.Hour)
	select {
	case <-b.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if f.Pending() != 0 || a.Stop() {
		t.Fatal("fired timer still pending")
	}
	z := f.NewTimer(0)
	select {
	case <-z.C():
	default:
		t.Fatal("zero timer did not fire at once")
	}
}

func TestWaitForTimersTimeout(t *testing.T) {
	if NewFake(time.Time{}).WaitForTimers(1, 10*time.Millisecond) {
		t.Fatal("WaitForTimers = true with no timers")
	}
}
