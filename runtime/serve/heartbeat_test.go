package serve

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/sim"
)

// A stream waiting in the queue sends heartbeats; when its client has gone,
// a heartbeat fails and the request leaves the queue without ever running.
func TestQueuedStreamHeartbeatDetectsDisconnect(t *testing.T) {
	e, err := sim.New(sim.Config{Model: "m", MaxContext: 100000, MaxConcurrency: 1, TimeScale: 1,
		Timing: sim.Timing{TTFT: time.Millisecond, TargetISL: 128, Step: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := New(Config{Model: "m", MaxConcurrency: 1, MaxQueue: 4, Heartbeat: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBackend(e); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.srv.Shutdown()
	body := `{"prompt":"the","max_tokens":5000,"ignore_eos":true,"stream":true}`
	open := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return c, bufio.NewReader(c)
	}
	running, _ := open()
	defer running.Close()
	waitFor(t, func() bool { return s.m.running.Load() == 1 })
	queued, qr := open()
	waitFor(t, func() bool { return s.m.waiting.Load() == 1 })
	// The queued client sees heartbeats.
	for range 50 {
		line, err := qr.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ": ping") {
			break
		}
	}
	queued.Close()
	waitFor(t, func() bool { return s.m.waiting.Load() == 0 })
	if got := s.m.running.Load(); got != 1 {
		t.Errorf("running = %d, want the first stream still running", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
