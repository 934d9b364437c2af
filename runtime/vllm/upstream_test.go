package vllm

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestUpstreamExitIsReportedWithOutput(t *testing.T) {
	up, err := Start(&Launch{Argv: []string{"sh", "-c", "echo loading weights; echo boom >&2; exit 3"}, Addr: "127.0.0.1:1"}, discard())
	if err != nil {
		t.Fatal(err)
	}
	err = up.WaitReady(context.Background(), time.Minute, 20*time.Millisecond)
	if err == nil {
		t.Fatal("WaitReady succeeded for a process that exited")
	}
	for _, want := range []string{"exit status 3", "loading weights", "boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestUpstreamStallAndStop(t *testing.T) {
	// A child of the upstream (the shell's sleep) shares its process group,
	// so Stop must take it down too or Done never closes (the pipe stays open).
	up, err := Start(&Launch{Argv: []string{"sh", "-c", "echo started; sleep 60; echo never"}, Addr: "127.0.0.1:1"}, discard())
	if err != nil {
		t.Fatal(err)
	}
	err = up.WaitReady(context.Background(), 150*time.Millisecond, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("WaitReady = %v, want a stall error", err)
	}
	up.Stop(5 * time.Second)
	select {
	case <-up.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("process group still running after Stop")
	}
}

func TestUpstreamWaitReadyHonoursContext(t *testing.T) {
	up, err := Start(&Launch{Argv: []string{"sleep", "60"}, Addr: "127.0.0.1:1"}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer up.Stop(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := up.WaitReady(ctx, time.Minute, 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("WaitReady = %v, want a context error", err)
	}
}
