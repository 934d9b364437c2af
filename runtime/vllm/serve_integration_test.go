package vllm

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// TestServeBlockedOnUnreadyHost runs a real `ttisd serve` with a vllm unit
// on this host, which has no Tenstorrent chips: the start must fail before
// docker runs, saying which checks failed and how to fix them.
func TestServeBlockedOnUnreadyHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd")
	}
	if _, err := os.Stat("/dev/tenstorrent/0"); err == nil {
		t.Skip("this host has a Tenstorrent chip")
	}
	bin := testbin.Path(t, "ttisd", false)
	dir := t.TempDir()
	rec := fakeDocker(t)
	unit := filepath.Join(dir, "llama.toml")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	body := "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n300\"\nchips = [0, 1]\nlisten = \"" + addr + "\"\n"
	if err := os.WriteFile(unit, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", unit).CombinedOutput()
	if err == nil {
		t.Fatalf("ttisd serve succeeded on a host without chips:\n%s", out)
	}
	for _, want := range []string{"host not ready", "chips: chips [0 1] missing", "fix: ", "ttisctl doctor llama"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(rec); strings.Contains(string(b), "argv: run") {
		t.Errorf("docker run was called:\n%s", b)
	}
}
