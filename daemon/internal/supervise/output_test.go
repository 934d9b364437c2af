package supervise

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		in, text string
		level    slog.Level
	}{
		{`plain text`, "plain text", slog.LevelInfo},
		{`{"time":"2026-01-01T00:00:00Z","level":"WARN","msg":"queue full","unit":"a","depth":64,"addr":"127.0.0.1:8000","why":"a b"}`,
			`WARN queue full addr=127.0.0.1:8000 depth=64 why="a b"`, slog.LevelWarn},
		{`{"level":"ERROR","msg":"boom"}`, "ERROR boom", slog.LevelError},
		{`{"level":"LOUD","msg":"odd level"}`, "INFO odd level", slog.LevelInfo},
		{`{"no":"msg"}`, `{"no":"msg"}`, slog.LevelInfo},
		{`{broken`, `{broken`, slog.LevelInfo},
	}
	for _, tt := range tests {
		level, _, _, text := parseLine([]byte(tt.in))
		if text != tt.text || level != tt.level {
			t.Errorf("parseLine(%s) = %v %q, want %v %q", tt.in, level, text, tt.level, tt.text)
		}
	}
}

func TestLineWriterSplitsAndCaps(t *testing.T) {
	var logged bytes.Buffer
	ring := logring.New(100)
	w := &lineWriter{stream: "stdout", ring: ring, log: slog.New(slog.NewTextHandler(&logged, nil)), clock: clock.NewFake(time.Time{})}
	_, _ = w.Write([]byte("one\ntw"))
	_, _ = w.Write([]byte("o\r\nthree"))
	_, _ = w.Write([]byte(strings.Repeat("x", maxLine+5)))
	w.Flush()
	var got []string
	for _, l := range ring.Tail(0) {
		got = append(got, l.Text)
	}
	want := []string{"one", "two", "three" + strings.Repeat("x", maxLine-5), "xxxxxxxxxx"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %.20q…, want %.20q…", i, got[i], want[i])
		}
	}
	if !strings.Contains(logged.String(), "msg=two stream=stdout") {
		t.Errorf("slog output %q", logged.String())
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"level":"INFO","msg":"x","n":1}`))
	f.Add([]byte(`plain`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, text := parseLine(b)
		if len(b) > 0 && text == "" && b[0] != '{' {
			t.Fatalf("lost the line %q", b)
		}
	})
}
