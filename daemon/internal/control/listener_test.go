package control

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// dial opens n raw connections to sock that send nothing.
func dial(t *testing.T, sock string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// waitFor polls cond for up to 10s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never %s", what)
}

// Connections past the cap are answered 503 naming the cap, and hold no
// place; when one of the connections within the cap closes, the next
// client is served.
func TestListenerCap(t *testing.T) {
	a := serveLimited(t, Limits{Connections: 2}, nil)
	idle := dial(t, a.sock, 2)
	waitFor(t, "2 connections open", func() bool { return a.ln.Open() == 2 })
	// An action: the client retries a refused query (until the idle
	// connections time out), but never an action.
	_, err := a.cl.Restart(context.Background(), "a")
	busy(t, err, "2 control connections", "max_connections")
	if a.ln.Open() != 2 {
		t.Fatalf("%d connections open, want the 2 within the cap", a.ln.Open())
	}
	idle[0].Close()
	waitFor(t, "a connection closed", func() bool { return a.ln.Open() == 1 })
	if _, err := a.cl.Units(context.Background()); err != nil {
		t.Fatalf("units with a place free: %v", err)
	}
}

// When every answering slot is busy too, a connection past the cap is
// closed at once, unanswered: the socket never holds more than
// Connections+rejectSlots descriptors.
func TestListenerClosesPastTheAnsweringSlots(t *testing.T) {
	// Refused clients that send nothing hold their slot.
	a := serveLimited(t, Limits{Connections: 1}, nil, func(l *Listener) { l.headWait = time.Minute })
	dial(t, a.sock, 1)
	waitFor(t, "1 connection open", func() bool { return a.ln.Open() == 1 })
	silent := dial(t, a.sock, rejectSlots)
	waitFor(t, "every answering slot taken", func() bool { return len(a.ln.rejecting) == rejectSlots })
	c := dial(t, a.sock, 1)[0]
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Fatalf("past the answering slots: read %q, %v; want a close without answer", b, err)
	}
	// A refused client that sends its request gets the answer.
	silent[0].Write([]byte("GET /v1/units HTTP/1.1\r\nHost: ttisd\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(silent[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	var eb api.ErrorBody
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || json.NewDecoder(resp.Body).Decode(&eb) != nil || eb.Error.Code != api.CodeBusy {
		t.Fatalf("refused answer %s %+v", resp.Status, eb)
	}
	resp.Body.Close()
	waitFor(t, "the slot freed", func() bool { return len(a.ln.rejecting) == rejectSlots-1 })
}

// After a burst of connections closes, the drain hook runs; a handful
// closing does not call it.
func TestListenerDrainsAfterABurst(t *testing.T) {
	var drains atomic.Int32
	a := serveLimited(t, Limits{}, func() { drains.Add(1) })
	few := dial(t, a.sock, drainPeak/4)
	waitFor(t, "the few open", func() bool { return a.ln.Open() == len(few) })
	for _, c := range few {
		c.Close()
	}
	waitFor(t, "the few closed", func() bool { return a.ln.Open() == 0 })
	a.ln.mu.Lock()
	draining := a.ln.draining
	a.ln.mu.Unlock()
	if draining || drains.Load() != 0 {
		t.Fatalf("%d connections closing started a drain", len(few))
	}

	burst := dial(t, a.sock, drainPeak+10)
	waitFor(t, "the burst open", func() bool { return a.ln.Open() == len(burst) })
	for _, c := range burst {
		c.Close()
	}
	waitFor(t, "a drain after the burst", func() bool { return drains.Load() > 0 })
	waitFor(t, "the drain to end", func() bool {
		a.ln.mu.Lock()
		defer a.ln.mu.Unlock()
		return !a.ln.draining
	})
}

// A reader that fell behind by more than the ring is told how many lines
// it missed, before the lines it gets.
func TestFollowWriteNotesLostLines(t *testing.T) {
	c, peer := net.Pipe()
	defer peer.Close()
	go func() {
		_ = write(c, nil, []api.LogLine{{Stream: "stdout", Text: "kept"}}, 3)
		c.Close()
	}()
	b, err := io.ReadAll(peer)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var note, kept api.LogLine
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &note) != nil || json.Unmarshal([]byte(lines[1]), &kept) != nil {
		t.Fatalf("stream %q", b)
	}
	if note.Stream != "ttisd" || !strings.Contains(note.Text, "3 lines skipped") || kept.Text != "kept" {
		t.Fatalf("note %+v, then %+v", note, kept)
	}
}

// BenchmarkFollowerMemory reports what an open `logs -f` stream costs in
// heap and goroutine stacks (B/follower), counting both ends of the
// connection since client and daemon share this process: 2,000 raw
// followers, each admitted (its response head read), measured after a
// collection, then closed.
func BenchmarkFollowerMemory(b *testing.B) {
	const n = 2000
	a := serveLimited(b, Limits{}, nil)
	var per float64
	for range b.N {
		before := inUse()
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("unix", a.sock)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.WriteString(c, "GET /v1/units/a/logs?follow=true&lines=1 HTTP/1.1\r\nHost: ttisd\r\n\r\n"); err != nil {
				b.Fatal(err)
			}
			line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
			if err != nil || !strings.Contains(line, " 200 ") {
				b.Fatalf("follower: %q %v", line, err)
			}
			conns = append(conns, c)
		}
		per = float64(inUse()-before) / n
		for _, c := range conns {
			c.Close()
		}
		waitFor(b, "the followers gone", func() bool { return a.ln.Open() == 0 })
	}
	b.ReportMetric(per, "B/follower")
}

// inUse is the heap and stack memory in use after a collection.
func inUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
