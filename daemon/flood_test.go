package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// floodFollowers opens n `logs -f` streams of unit on socket, c at a time,
// and keeps those admitted open; a refused one is closed, and the first
// refusal's answer is kept.
type floodFollowers struct {
	mu        sync.Mutex
	held      []net.Conn
	refused   int
	failed    int
	firstBusy string
	firstFail string
}

func (f *floodFollowers) run(socket, unit string, n, c int) {
	var wg sync.WaitGroup
	next := make(chan struct{})
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				f.one(socket, unit)
			}
		}()
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
}

func (f *floodFollowers) one(socket, unit string) {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		f.fail("dial: " + err.Error())
		return
	}
	if _, err := fmt.Fprintf(conn, "GET /v1/units/%s/logs?follow=true&lines=1 HTTP/1.1\r\nHost: ttisd\r\n\r\n", unit); err != nil {
		conn.Close()
		f.fail("write: " + err.Error())
		return
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		f.fail("read: " + err.Error())
		return
	}
	if resp.StatusCode == http.StatusOK {
		f.mu.Lock()
		f.held = append(f.held, conn)
		f.mu.Unlock()
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	conn.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused++
	if f.firstBusy == "" {
		f.firstBusy = fmt.Sprintf("%s %s", resp.Status, body)
	}
}

func (f *floodFollowers) fail(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed++
	if f.firstFail == "" {
		f.firstFail = why
	}
}

func (f *floodFollowers) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.held {
		c.Close()
	}
	f.held = nil
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// A flood of log followers, far past their limit, on a daemon with few
// descriptors (ulimit -n 512): the limit holds, every refusal is a 503
// naming it, status answers all along, the daemon's descriptors stay under
// the connection cap, and the unit's server is neither restarted nor
// disturbed. Once the followers leave, a new one is admitted.
func TestFollowerFloodSparesTheSupervisor(t *testing.T) {
	const (
		nofile    = 512
		maxConns  = 200
		followers = 40
		flood     = 3000
	)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ttisd.toml")
	conf := fmt.Sprintf("[control]\nmax_connections = %d\nmax_followers = %d\nmax_actions = 8\nmax_queries = 32\nfd_reserve = 96\n", maxConns, followers)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := freePort(t)
	ulimit := func(c *exec.Cmd) *exec.Cmd {
		w := exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf("ulimit -n %d && exec \"$0\" \"$@\"", nofile), c.Path}, c.Args[1:]...)...)
		w.Env = c.Env
		return w
	}
	d := startDaemonWrapped(t, dir, map[string]string{"a": simUnit(listen, "")}, ulimit, "--config", cfg)
	before := d.waitUnit(t, "a", "active", active)
	pid := d.cmd.Process.Pid
	fdsBefore := openFDs(t, pid)

	var f floodFollowers
	defer f.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(d.socket, "a", flood, 50)
	}()
	// Status answers while the flood runs, and the daemon's descriptors
	// stay within what the control socket may hold.
	var queries, maxFDs int
	for flooding := true; flooding; queries++ {
		select {
		case <-done:
			flooding = false
		default:
		}
		u, err := d.cl.Unit(context.Background(), "a", 0)
		if err != nil {
			t.Fatalf("status during the flood (query %d): %v", queries, err)
		}
		if u.PID != before.PID || u.RestartsTotal != 0 {
			t.Fatalf("the unit's server was disturbed during the flood: %+v", u.Unit)
		}
		maxFDs = max(maxFDs, openFDs(t, pid))
	}
	if limit := fdsBefore + maxConns + 32; maxFDs > limit {
		t.Errorf("ttisd held %d descriptors during the flood, more than the %d it had, the %d-connection cap and 32 answering", maxFDs, fdsBefore, maxConns)
	}
	f.mu.Lock()
	held, refused, failed := len(f.held), f.refused, f.failed
	f.mu.Unlock()
	t.Logf("%d followers: %d admitted, %d refused, %d failed; %d status queries answered; ttisd held at most %d descriptors (%d before)",
		flood, held, refused, failed, queries, maxFDs, fdsBefore)
	if held != followers || refused+failed != flood-followers {
		t.Errorf("%d followers admitted and %d refused, want %d and %d (first failure: %s)", held, refused, followers, flood-followers, f.firstFail)
	}
	if failed > 0 {
		t.Errorf("%d followers got no answer (first: %s)", failed, f.firstFail)
	}
	if !strings.Contains(f.firstBusy, "503") || !strings.Contains(f.firstBusy, fmt.Sprintf("limit of %d log followers", followers)) ||
		!strings.Contains(f.firstBusy, "control.max_followers") || !strings.Contains(f.firstBusy, api.CodeBusy) {
		t.Errorf("refusal %q does not name the limit", f.firstBusy)
	}
	u := d.unit(t, "a")
	if !active(u) || u.PID != before.PID || u.RestartsTotal != 0 || !healthy(listen) {
		t.Fatalf("after the flood: %+v", u.Unit)
	}

	// The followers leave: the places free without a line being logged.
	f.close()
	var admitted bool
	for range 500 {
		var again floodFollowers
		again.one(d.socket, "a")
		admitted = len(again.held) == 1
		again.close()
		if admitted {
			break
		}
		if again.failed > 0 {
			t.Fatalf("follower after the flood: %s", again.firstFail)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !admitted {
		t.Fatal("no follower admitted after the flood left")
	}

	// Idle connections past the cap (clients that connect and say
	// nothing) cost no more descriptors than the cap and the answering
	// slots either; within the cap they stay until the request-head
	// timeout.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 3 * maxConns {
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
		maxFDs = max(maxFDs, openFDs(t, pid))
	}
	if limit := fdsBefore + maxConns + 32; maxFDs > limit {
		t.Errorf("ttisd held %d descriptors with %d idle connections, more than the %d it had, the %d-connection cap and 32 answering", maxFDs, len(idle), fdsBefore, maxConns)
	}
	t.Logf("%d idle connections: ttisd held at most %d descriptors", len(idle), maxFDs)
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	if u, err := d.cl.Unit(context.Background(), "a", 0); err != nil || u.PID != before.PID || u.RestartsTotal != 0 {
		t.Fatalf("after the idle connections: %+v, %v", u.Unit, err)
	}

	b, _ := os.ReadFile(filepath.Join(dir, "ttisd.log"))
	if strings.Contains(string(b), "cannot probe") || strings.Contains(string(b), "too many open files") {
		t.Errorf("ttisd ran short of descriptors:\n%s", b)
	}
}
