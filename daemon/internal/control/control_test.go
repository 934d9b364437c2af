package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/reconcile"
	"github.com/ttis-dev/ttis/units"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend knows one unit, "a".
type fakeBackend struct {
	ring *logring.Ring
	mu   sync.Mutex
	// started lists the units Start was called for.
	started []string
	// hold, when set, makes Start wait for it to close; entered receives
	// a value as each such Start begins to wait.
	hold    chan struct{}
	entered chan struct{}
}

func (f *fakeBackend) Info() api.Info { return api.Info{Version: "test", RunsDir: "/state/runs"} }
func (f *fakeBackend) List() api.UnitList {
	return api.UnitList{Units: []api.Unit{{View: units.View{Name: "a"}, State: api.StateActive}}}
}
func (f *fakeBackend) find(name string) error {
	switch name {
	case "a":
		return nil
	case "broken":
		return fmt.Errorf("unit %q has no valid version: %w", name, reconcile.ErrNotRunnable)
	case "boom":
		return errors.New("disk on fire")
	}
	return fmt.Errorf("unit %q: %w", name, reconcile.ErrNoUnit)
}
func (f *fakeBackend) Unit(name string, lines int) (api.UnitDetail, error) {
	if err := f.find(name); err != nil {
		return api.UnitDetail{}, err
	}
	return api.UnitDetail{Unit: api.Unit{View: units.View{Name: name, Listen: "0.0.0.0:8000", Model: "m", Device: "n150",
		AuthMode: "jwt", AuthSecretFile: "/s"}, State: api.StateActive}, Logs: f.ring.Tail(lines)}, nil
}
func (f *fakeBackend) Start(ctx context.Context, name string) error {
	f.mu.Lock()
	f.started = append(f.started, name)
	hold, entered := f.hold, f.entered
	f.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.find(name)
}
func (f *fakeBackend) Stop(_ context.Context, name string) error    { return f.find(name) }
func (f *fakeBackend) Restart(_ context.Context, name string) error { return f.find(name) }
func (f *fakeBackend) Reload(context.Context) (api.ReloadResult, error) {
	return api.ReloadResult{Units: 1, Changed: []string{"a"}}, nil
}
func (f *fakeBackend) Ring(name string) (*logring.Ring, error) {
	if err := f.find(name); err != nil {
		return nil, err
	}
	return f.ring, nil
}
func (f *fakeBackend) Devices() api.Devices {
	return api.Devices{Root: "/dev/tenstorrent", Chips: []api.Chip{{ID: 0, Present: true, Holder: "a"}}}
}

// serve runs the API on a unix socket and returns a client for it.
func serve(t *testing.T) (*fakeBackend, *client.Client, chan struct{}) {
	t.Helper()
	a := serveLimited(t, Limits{}, nil)
	return a.fb, a.cl, a.done
}

// served is an API served by serveLimited.
type served struct {
	fb   *fakeBackend
	cl   *client.Client
	done chan struct{}
	sock string
	ln   *Listener
}

// serveLimited serves the API on a unix socket with limits; onDrain is
// the Listener's, and opts change the Listener before it serves.
func serveLimited(t testing.TB, limits Limits, onDrain func(), opts ...func(*Listener)) served {
	t.Helper()
	fb := &fakeBackend{ring: logring.New(10)}
	fb.ring.Add(api.LogLine{Stream: "stdout", Text: "first"})
	done := make(chan struct{})
	sock := filepath.Join(t.TempDir(), "c.sock")
	raw, err := Listen(sock, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(raw, limits.Connections, onDrain)
	for _, o := range opts {
		o(ln)
	}
	srv := NewHTTPServer((&Server{Backend: fb, Done: done, Limits: limits}).Handler())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			close(done)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return served{fb: fb, cl: client.New(sock), done: done, sock: sock, ln: ln}
}

func TestEndpoints(t *testing.T) {
	fb, cl, _ := serve(t)
	ctx := context.Background()
	if l, err := cl.Units(ctx); err != nil || len(l.Units) != 1 {
		t.Fatalf("Units = %+v, %v", l, err)
	}
	if d, err := cl.Unit(ctx, "a", 5); err != nil || len(d.Logs) != 1 || d.Logs[0].Text != "first" {
		t.Fatalf("Unit = %+v, %v", d, err)
	}
	if _, err := cl.Start(ctx, "a"); err != nil || len(fb.started) != 1 {
		t.Fatalf("Start: %v %v", err, fb.started)
	}
	if res, err := cl.Reload(ctx); err != nil || res.Changed[0] != "a" {
		t.Fatalf("Reload = %+v, %v", res, err)
	}
	if devs, err := cl.Devices(ctx); err != nil || devs.Chips[0].Holder != "a" {
		t.Fatalf("Devices = %+v, %v", devs, err)
	}
	// What a workflow needs to find a unit's server: its address, auth and
	// the results store.
	d, err := cl.Unit(ctx, "a", 0)
	if err != nil || d.Listen != "0.0.0.0:8000" || d.AuthMode != "jwt" || d.AuthSecretFile != "/s" || d.Model != "m" {
		t.Fatalf("Unit = %+v, %v", d, err)
	}
	if info, err := cl.Info(ctx); err != nil || info.RunsDir != "/state/runs" {
		t.Fatalf("Info = %+v, %v", info, err)
	}
}

func TestErrorMapping(t *testing.T) {
	_, cl, _ := serve(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		status int
		code   string
	}{
		{"nope", http.StatusNotFound, api.CodeNotFound},
		{"broken", http.StatusConflict, api.CodeConflict},
		{"boom", http.StatusInternalServerError, api.CodeInternal},
	}
	for _, tt := range tests {
		_, err := cl.Restart(ctx, tt.name)
		var e *client.Error
		if !errors.As(err, &e) || e.Status != tt.status || e.Code != tt.code {
			t.Errorf("restart %s: %v, want HTTP %d %s", tt.name, err, tt.status, tt.code)
		}
	}
	if _, err := cl.Unit(ctx, "nope", 0); !client.IsNotFound(err) {
		t.Errorf("IsNotFound(%v) = false", err)
	}
}

func TestBadRequests(t *testing.T) {
	fb := &fakeBackend{ring: logring.New(2)}
	h := (&Server{Backend: fb}).Handler()
	tests := []struct {
		method, path string
		header       string
		status       int
	}{
		{"GET", "/v1/units/a?lines=-1", "", http.StatusBadRequest},
		{"GET", "/v1/units/a/logs?follow=maybe", "", http.StatusBadRequest},
		{"GET", "/v1/nothing", "", http.StatusNotFound},
		{"DELETE", "/v1/units/a", "", http.StatusNotFound},
		{"GET", "/v1/units", "http://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		if tt.header != "" {
			req.Header.Set("Origin", tt.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s %s: %d, want %d (%s)", tt.method, tt.path, rec.Code, tt.status, rec.Body)
		}
		if rec.Header().Get(api.HeaderAPI) != api.Version {
			t.Errorf("%s %s: no API version header", tt.method, tt.path)
		}
		if rec.Code >= 400 {
			var eb api.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Message == "" {
				t.Errorf("%s %s: error body %q", tt.method, tt.path, rec.Body)
			}
		}
	}
}

func TestLogsFollow(t *testing.T) {
	fb, cl, done := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- cl.Logs(ctx, "a", 10, true, func(l api.LogLine) error {
			got <- l.Text
			return nil
		})
	}()
	if l := <-got; l != "first" {
		t.Fatalf("first line %q", l)
	}
	fb.ring.Add(api.LogLine{Stream: "stderr", Text: "second"})
	select {
	case l := <-got:
		if l != "second" {
			t.Fatalf("followed %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("new line not streamed")
	}
	// Daemon shutdown ends the stream cleanly.
	close(done)
	if err := <-errc; err != nil {
		t.Fatalf("Logs: %v", err)
	}
	if err := cl.Logs(ctx, "nope", 1, false, func(api.LogLine) error { return nil }); !client.IsNotFound(err) {
		t.Fatalf("logs of unknown unit: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	cl := client.New(filepath.Join(t.TempDir(), "none.sock"))
	_, err := cl.Units(context.Background())
	if !client.IsUnreachable(err) || !strings.Contains(err.Error(), "is it running?") {
		t.Fatalf("err %v", err)
	}
}

func TestListenSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	ln, err := Listen(sock, "no-such-group-ttis-test", nil)
	if err != nil {
		t.Fatalf("a missing group must not stop the daemon: %v", err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode %v, %v", fi.Mode(), err)
	}
	if pfi, _ := os.Stat(filepath.Dir(sock)); pfi.Mode().Perm() != 0o750 {
		t.Fatalf("socket folder mode %v", pfi.Mode())
	}
	// Live socket: refused.
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	if _, err := Listen(sock, "", nil); err == nil || !strings.Contains(err.Error(), "another ttisd") {
		t.Fatalf("second listen on a live socket: %v", err)
	}
	ln.Close()

	// Stale socket: replaced.
	stale := filepath.Join(dir, "stale.sock")
	l2, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l2.(*net.UnixListener).SetUnlinkOnClose(false)
	l2.Close()
	l3, err := Listen(stale, "", nil)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l3.Close()

	// A regular file is never removed.
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, "", nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("listen over a regular file: %v", err)
	}
}

func TestAuditLogNamesPeer(t *testing.T) {
	var logged strings.Builder
	fb := &fakeBackend{ring: logring.New(2)}
	sock := filepath.Join(t.TempDir(), "c.sock")
	ln, err := Listen(sock, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logged.Write(p) })
	srv := NewHTTPServer((&Server{Backend: fb, Logger: slog.New(slog.NewTextHandler(w, nil))}).Handler())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown(context.Background())
	if _, err := client.New(sock).Stop(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("action=stop unit=a peer_uid=%d peer_pid=%d", os.Getuid(), os.Getpid())
	if !strings.Contains(logged.String(), want) {
		t.Fatalf("audit log %q lacks %q", logged.String(), want)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
