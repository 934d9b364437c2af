package runner

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
)

// A cache entry that is a named pipe or a device node (the cache lives in
// the results store, which others may write) counts as absent: Get neither
// waits on it nor reads it forever, and the request is sent again.
func TestCacheHostileEntries(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good, pipe, zero := Key("t", "d1", "m", "api", evalsuite.Instance{}), Key("t", "d2", "m", "api", evalsuite.Instance{}), Key("t", "d3", "m", "api", evalsuite.Instance{})
	if err := c.Put(good, evalsuite.Response{Text: "4"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{pipe, zero} {
		if err := os.MkdirAll(filepath.Dir(c.path(k)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(c.path(pipe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", c.path(zero)); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]string{"pipe": pipe, "zero": zero} {
		done := make(chan bool, 1)
		go func() {
			_, _, ok := c.Get(k)
			done <- ok
		}()
		select {
		case ok := <-done:
			if ok {
				t.Errorf("%s entry found", name)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Get of a %s entry blocked for 30s", name)
		}
	}
	if r, _, ok := c.Get(good); !ok || r.Text != "4" {
		t.Errorf("good entry: %+v %v", r, ok)
	}
}
