package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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

// runServe runs `ttisd serve` with args and returns its output and exit
// code; it fails the test if the server is still running after 20s.
func runServe(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ttisd := testbin.Path(t, "ttisd", false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ttisd, append([]string{"serve"}, args...)...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ttisd serve %v still running after 20s: %s", args, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// A cpu unit may name only a model file inside the model folders; a file
// elsewhere is refused before it is opened, and a file inside that is no
// GGUF ends the server at once with an error that shows none of its bytes.
func TestServeModelFolders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd")
	}
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.Mkdir(models, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "shadow")
	notGGUF := filepath.Join(models, "text.gguf")
	for _, p := range []string{secret, notGGUF} {
		if err := os.WriteFile(p, []byte("root:$6$hash:19000:0:99999:7:::\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unit := func(name, model string) string {
		p := filepath.Join(dir, name+".toml")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		text := fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\nlisten = %q\n", model, addr)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, code := runServe(t, "--model-dir", models, unit("outside", secret))
	if code != 2 || !strings.Contains(out, "model file "+secret+" is outside the model folders ("+models+")") {
		t.Errorf("model outside the folders: exit %d\n%s", code, out)
	}
	// Without --model-dir only /var/lib/ttis/models is allowed.
	out, code = runServe(t, unit("default", secret))
	if code != 2 || !strings.Contains(out, "outside the model folders (/var/lib/ttis/models)") {
		t.Errorf("default model folder: exit %d\n%s", code, out)
	}
	start := time.Now()
	out, code = runServe(t, "--model-dir", models, unit("text", notGGUF))
	if code == 0 || !strings.Contains(out, "not a GGUF file") {
		t.Errorf("not a GGUF file: exit %d\n%s", code, out)
	}
	// The shutdown grace is 25 s by default: a failed load must not wait it.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a failed model load took %s to end the server", d)
	}
	if strings.Contains(out, "root:") || strings.Contains(out, "root") {
		t.Errorf("the error shows the file's content:\n%s", out)
	}
}
