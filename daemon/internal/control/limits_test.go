package control

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/api/client"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		method, target string
		want           Kind
	}{
		{"GET", "/v1/units", KindQuery},
		{"GET", "/v1/units/a", KindQuery},
		{"GET", "/v1/info", KindQuery},
		{"GET", "/v1/units/a/logs?lines=5", KindQuery},
		{"GET", "/v1/units/a/logs?follow=false", KindQuery},
		{"GET", "/v1/units/a/logs?follow=true&lines=1", KindFollow},
		{"POST", "/v1/units/a/restart", KindAction},
		{"POST", "/v1/reload", KindAction},
		{"DELETE", "/v1/units/a", KindQuery},
	}
	for _, tt := range tests {
		if got := kindOf(httptest.NewRequest(tt.method, tt.target, nil)); got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.method, tt.target, got, tt.want)
		}
	}
}

func TestSize(t *testing.T) {
	want := Limits{Connections: 2048, Followers: 512, Actions: 64, Queries: 256}
	tests := []struct {
		name    string
		nofile  uint64
		reserve int
		got     Limits
		note    string
	}{
		{name: "systemd's 65536", nofile: 65535, reserve: 1024, got: want},
		{name: "exactly enough", nofile: 2048 + rejectSlots + 1024, reserve: 1024, got: want},
		{name: "half", nofile: 1024 + rejectSlots + 1024, reserve: 1024, got: Limits{Connections: 1024, Followers: 256, Actions: 32, Queries: 128},
			note: "RLIMIT_NOFILE 2080) less control.fd_reserve (1024) leaves the control socket 1024 connections, not the 2048"},
		{name: "no room", nofile: 1024, reserve: 1024, got: Limits{Connections: minConnections, Followers: 4, Actions: 1, Queries: 2},
			note: "the supervisor keeps only 976 descriptors"},
		{name: "huge limit", nofile: 1 << 62, reserve: 1024, got: want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := Size(want, tt.nofile, tt.reserve)
			if got != tt.got {
				t.Errorf("Size = %+v, want %+v", got, tt.got)
			}
			if (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("note %q, want one containing %q", note, tt.note)
			}
			if tt.note == "" && got.Connections+rejectSlots+tt.reserve > int(min(tt.nofile, 1<<31)) {
				t.Errorf("connections %d + %d answering + reserve %d exceed the limit %d", got.Connections, rejectSlots, tt.reserve, tt.nofile)
			}
		})
	}
}

// busy asserts err is the control socket's 503 for a full limit, naming
// the kind and its key.
func busy(t *testing.T, err error, what, key string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != api.CodeBusy || !strings.Contains(e.Message, what) || !strings.Contains(e.Message, "control."+key) {
		t.Fatalf("err %v (%#v), want a 503 %q naming %q and control.%s", err, e, api.CodeBusy, what, key)
	}
}

// follower is one `logs -f` client.
type follower struct {
	cancel context.CancelFunc
	lines  chan string
	err    chan error
}

// follow starts following unit a and waits for its first line (admitted)
// or its end (refused).
func follow(t *testing.T, cl *client.Client) (*follower, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, lines: make(chan string, 16), err: make(chan error, 1)}
	go func() {
		f.err <- cl.Logs(ctx, "a", 1, true, func(l api.LogLine) error {
			f.lines <- l.Text
			return nil
		})
	}()
	select {
	case <-f.lines:
		t.Cleanup(cancel)
		return f, nil
	case err := <-f.err:
		cancel()
		return nil, err
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("follower neither admitted nor refused")
		return nil, nil
	}
}

// Each kind has its own limit: followers at theirs are refused with a
// message naming it while status and actions still answer; a follower that
// leaves (without a line being logged) frees its place at once; actions
// at their limit are refused while queries answer.
func TestKindLimits(t *testing.T) {
	a := serveLimited(t, Limits{Followers: 2, Actions: 1, Queries: 4}, nil)
	ctx := context.Background()
	f1, err := follow(t, a.cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := follow(t, a.cl); err != nil {
		t.Fatal(err)
	}
	_, err = follow(t, a.cl)
	busy(t, err, "2 log followers", "max_followers")
	if _, err := a.cl.Unit(ctx, "a", 1); err != nil {
		t.Fatalf("status under a full follower limit: %v", err)
	}
	if _, err := a.cl.Start(ctx, "a"); err != nil {
		t.Fatalf("start under a full follower limit: %v", err)
	}

	// The client leaves; no line is logged, yet its place frees.
	f1.cancel()
	<-f1.err
	var admitted bool
	for range 500 {
		f, err := follow(t, a.cl)
		if err == nil {
			f.cancel()
			admitted = true
			break
		}
		busy(t, err, "2 log followers", "max_followers")
		time.Sleep(10 * time.Millisecond)
	}
	if !admitted {
		t.Fatal("a follower that left kept its place")
	}

	// An action in progress fills the action limit; queries still answer.
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	a.fb.mu.Lock()
	a.fb.hold, a.fb.entered = hold, entered
	a.fb.mu.Unlock()
	first := make(chan error, 1)
	go func() {
		_, err := a.cl.Start(ctx, "a")
		first <- err
	}()
	<-entered
	_, err = a.cl.Restart(ctx, "a")
	busy(t, err, "1 unit actions", "max_actions")
	if _, err := a.cl.Units(ctx); err != nil {
		t.Fatalf("units under a full action limit: %v", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := a.cl.Restart(ctx, "a"); err != nil {
		t.Fatalf("restart after the action finished: %v", err)
	}
}
