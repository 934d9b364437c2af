//go:build soak

package soak_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// floodFollowers is how many `logs -f` streams the follower flood opens:
// the number that exhausted ttisd's descriptors in issue #31.
const floodFollowers = 24000

// followerFlood opens floodFollowers log streams of the steady unit, 200
// at a time, keeping those ttisd admits, while status queries run; then
// closes them. It fails when a status query fails, a unit restarts,
// requests on the units no fault touches are lost, or ttisd's resident
// memory does not come back within 20% of what it was before.
func (s *soak) followerFlood() (string, error) {
	type server struct{ pid, restarts int }
	servers := func() (map[string]server, error) {
		m := map[string]server{}
		for _, u := range []string{steady, victim, cpuU} {
			d, err := s.unit(u)
			if err != nil {
				return nil, err
			}
			m[u] = server{d.PID, d.RestartsTotal}
		}
		return m, nil
	}
	before, err := servers()
	if err != nil {
		return "", err
	}
	lostBefore := s.load.lostOn(steady, cpuU)
	rssBefore := s.rss()

	var f followers
	defer f.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.open(s.socket, steady, floodFollowers, 200)
	}()
	queries, rssWith := 0, rssBefore
	var statusErr error
	for flooding := true; flooding; {
		select {
		case <-done:
			flooding = false
		default:
		}
		if _, err := s.unit(steady); err != nil && statusErr == nil {
			statusErr = fmt.Errorf("status during the flood: %w", err)
		}
		queries++
		rssWith = max(rssWith, s.rss())
		time.Sleep(20 * time.Millisecond)
	}
	f.close()
	// The memory comes back once the followers are gone (the daemon
	// drains after a burst); wait for it, within bounds.
	rssAfter := s.rss()
	for i := 0; i < 100 && rssAfter > rssBefore*6/5; i++ {
		time.Sleep(100 * time.Millisecond)
		rssAfter = s.rss()
	}
	after, err := servers()
	if err != nil {
		return "", err
	}
	// A server restarted by the daemon has a new pid or a higher count.
	restarts := 0
	for u, b := range before {
		if a := after[u]; a.pid != b.pid || a.restarts > b.restarts {
			restarts++
		}
	}
	lost := s.load.lostOn(steady, cpuU) - lostBefore
	outcome := fmt.Sprintf("%d admitted, %d refused (%s), %d unanswered; status answered %d times; lost on unchanged units %d; restarts %d; ttisd RSS %d/%d/%d MiB before/with/after",
		f.admitted, f.refused, f.firstRefusal(), f.failed, queries, lost, restarts, rssBefore>>20, rssWith>>20, rssAfter>>20)
	switch {
	case statusErr != nil:
		return outcome, statusErr
	case f.failed > 0:
		return outcome, fmt.Errorf("%s: %d followers got no answer (first: %s)", outcome, f.failed, f.firstFail)
	case restarts > 0 || lost > 0:
		return outcome, fmt.Errorf("%s: the flood disturbed the servers", outcome)
	case rssAfter > rssBefore*6/5:
		return outcome, fmt.Errorf("%s: ttisd's memory did not come back within 20%%", outcome)
	}
	return outcome, nil
}

// rss is the daemon's resident memory in bytes (0 when unreadable).
func (s *soak) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.daemon.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// lostOn sums the requests lost on units.
func (l *load) lostOn(units ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, u := range units {
		n += l.counts[u]["lost"]
	}
	return n
}

// followers is a flood of raw `logs -f` clients.
type followers struct {
	mu                        sync.Mutex
	held                      []net.Conn
	admitted, refused, failed int
	firstRefused, firstFail   string
}

// open starts n followers of unit, c at a time, keeping the admitted ones.
func (f *followers) open(socket, unit string, n, c int) {
	next := make(chan struct{})
	var wg sync.WaitGroup
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

func (f *followers) one(socket, unit string) {
	conn, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		f.note(nil, "dial: "+err.Error())
		return
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET /v1/units/%s/logs?follow=true&lines=1 HTTP/1.1\r\nHost: ttisd\r\n\r\n", unit); err != nil {
		conn.Close()
		f.note(nil, "write: "+err.Error())
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		f.note(nil, "read: "+err.Error())
		return
	}
	if resp.StatusCode == http.StatusOK {
		_ = conn.SetDeadline(time.Time{})
		f.note(conn, "")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	conn.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused++
	if f.firstRefused == "" {
		f.firstRefused = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
}

func (f *followers) note(held net.Conn, fail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if held != nil {
		f.held = append(f.held, held)
		f.admitted++
		return
	}
	f.failed++
	if f.firstFail == "" {
		f.firstFail = fail
	}
}

// firstRefusal says how the first refusal read: the status, the code and
// the limit it named (or the whole answer when it named none).
func (f *followers) firstRefusal() string {
	status, body, _ := strings.Cut(f.firstRefused, " ")
	var eb api.ErrorBody
	if json.Unmarshal([]byte(body), &eb) != nil || !strings.Contains(eb.Error.Message, "control.max_followers") {
		return f.firstRefused
	}
	return status + " " + eb.Error.Code + " naming control.max_followers"
}

func (f *followers) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.held {
		c.Close()
	}
	f.held = nil
}
