package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func listen(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return c
}

func read(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestMessages(t *testing.T) {
	c := listen(t)
	var n Notifier
	n.Ready("2 units\nactive")
	if got := read(t, c); got != "READY=1\nSTATUS=2 units active" {
		t.Fatalf("ready = %q", got)
	}
	n.Reloading()
	if got := read(t, c); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("reloading = %q", got)
	}
	n.Stopping()
	if got := read(t, c); got != "STOPPING=1" {
		t.Fatalf("stopping = %q", got)
	}
	n.Watchdog()
	if got := read(t, c); got != "WATCHDOG=1" {
		t.Fatalf("watchdog = %q", got)
	}
}

func TestNoSocketIsNoop(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	var n Notifier
	n.Ready("x")
	n.Status("y")
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "4000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	if got := WatchdogInterval(); got != 2*time.Second {
		t.Fatalf("interval %v", got)
	}
	t.Setenv("WATCHDOG_PID", "1")
	if got := WatchdogInterval(); got != 0 {
		t.Fatalf("interval for another pid %v", got)
	}
}
