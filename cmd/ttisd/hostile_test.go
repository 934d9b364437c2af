package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// `ttisd serve` on a named pipe reports it and exits at once: opening the
// pipe for reading would block until a writer came.
func TestServeNamedPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd")
	}
	ttisd := testbin.Path(t, "ttisd", false)
	fifo := filepath.Join(t.TempDir(), "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ttisd, "serve", fifo).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ttisd serve on a named pipe blocked: %s", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), fifo+": not a regular file (a named pipe)") {
		t.Fatalf("ttisd serve on a named pipe: %v\n%s", err, out)
	}
}
