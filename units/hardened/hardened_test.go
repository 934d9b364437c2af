package hardened

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test instead of hanging when f does not return: the bug
// these tests guard against is a read that never returns. The bound is
// generous; nothing here is timed.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked for 20s", what)
	}
}

// hostile is a folder with a good file and every kind of path a reader
// must refuse rather than open, with what the error must say.
func hostile(t *testing.T) (dir string, want map[string]string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good", "hello\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"zero": "/dev/zero", "loop": "loop", "dangling": "nowhere", "tofifo": "fifo", "togood": "good"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	big, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 400 MB that cost nothing to make, and must cost nothing to
	// refuse.
	if err := big.Truncate(400 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		"fifo":     "not a regular file (a named pipe)",
		"tofifo":   "not a regular file (a named pipe)",
		"zero":     "not a regular file (a device node)",
		"loop":     "too many levels of symbolic links",
		"dangling": "no such file or directory",
		"missing":  "no such file or directory",
		"big":      "419430400 bytes, larger than the 1048576-byte limit",
		"folder":   "not a regular file (a folder)",
	}
}

func TestReadFileRefusesHostilePaths(t *testing.T) {
	dir, want := hostile(t)
	for name, msg := range want {
		path := filepath.Join(dir, name)
		var err error
		within(t, "ReadFile "+name, func() { _, err = ReadFile(context.Background(), path, 1<<20) })
		if err == nil || err.Error() != path+": "+msg {
			t.Errorf("%s: error %v, want %q", name, err, path+": "+msg)
		}
		var he *Error
		if !errors.As(err, &he) || he.Path != path {
			t.Errorf("%s: error %T does not name the path", name, err)
		}
		within(t, "Open "+name, func() { _, err = Open(context.Background(), path, 1<<20) })
		if err == nil || err.Error() != path+": "+msg {
			t.Errorf("Open %s: error %v, want %q", name, err, path+": "+msg)
		}
	}
}

func TestErrorsSayWhatKind(t *testing.T) {
	dir, _ := hostile(t)
	ctx := context.Background()
	cases := []struct {
		name string
		is   error
	}{
		{"fifo", ErrNotRegular}, {"zero", ErrNotRegular}, {"folder", ErrNotRegular},
		{"big", ErrTooLarge}, {"missing", fs.ErrNotExist}, {"dangling", fs.ErrNotExist},
	}
	for _, c := range cases {
		_, err := ReadFile(ctx, filepath.Join(dir, c.name), 1<<20)
		if !errors.Is(err, c.is) {
			t.Errorf("%s: %v is not %v", c.name, err, c.is)
		}
	}
	_, err := ReadFile(ctx, filepath.Join(dir, "big"), 1<<20)
	var he *Error
	if !errors.As(err, &he) || he.Size != 400<<20 {
		t.Errorf("big: size not reported: %#v", err)
	}
}

// Symbolic links are followed, as the unit loader always did: the file
// they name is what is checked and read.
func TestReadFileFollowsSymlinks(t *testing.T) {
	dir, _ := hostile(t)
	b, err := ReadFile(context.Background(), filepath.Join(dir, "togood"), 6)
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("read through a link: %q, %v", b, err)
	}
	f, err := Open(context.Background(), filepath.Join(dir, "togood"), 6)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "hello\n" {
		t.Fatalf("open through a link: %q, %v", b, err)
	}
}

func TestReadFileBound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	data := bytes.Repeat([]byte("x"), 3<<20+5) // spans several read chunks
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(context.Background(), path, int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("file at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(context.Background(), path, int64(len(data))-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("file one byte over: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(context.Background(), empty, 1); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %q, %v", b, err)
	}
	if _, err := ReadFile(context.Background(), path, 0); err == nil {
		t.Fatal("a bound of 0 was accepted")
	}
}

// A file whose size stat does not tell (kernel files say 0 bytes) is still
// read only up to the bound.
func TestReadFileBoundWhenStatSaysZero(t *testing.T) {
	const path = "/proc/self/status"
	st, err := os.Stat(path)
	if err != nil || st.Size() != 0 {
		t.Skipf("%s: size %v, %v: not a zero-size kernel file here", path, st, err)
	}
	if b, err := ReadFile(context.Background(), path, 1<<20); err != nil || !bytes.Contains(b, []byte("VmRSS")) && !bytes.Contains(b, []byte("Name:")) {
		t.Fatalf("within the bound: %q, %v", b, err)
	}
	_, err = ReadFile(context.Background(), path, 16)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "grew while it was read") {
		t.Fatalf("over the bound: %v", err)
	}
}

func TestReadFileContextEnded(t *testing.T) {
	dir, _ := hostile(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ReadFile(ctx, filepath.Join(dir, "good"), 100)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "good: read stopped: context canceled") {
		t.Fatalf("cancelled context: %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if _, err := ReadDir(dctx, dir, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline passed: %v", err)
	}
	// A live context with a deadline reads as usual.
	lctx, lcancel := context.WithTimeout(context.Background(), time.Hour)
	defer lcancel()
	if b, err := ReadFile(lctx, filepath.Join(dir, "good"), 100); err != nil || string(b) != "hello\n" {
		t.Fatalf("live context: %q, %v", b, err)
	}
}

// A read stuck in the kernel (a hung network file system) is given up when
// the context ends; what it returns later is released.
func TestStuckCallIsAbandonedAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, unblock := make(chan struct{}), make(chan struct{})
	released := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := withContext(ctx, "/stuck", func() (string, error) {
			close(started)
			<-unblock
			return "file", nil
		}, func(v string) { released <- v })
		errc <- err
	}()
	<-started
	cancel()
	var err error
	within(t, "withContext after cancel", func() { err = <-errc })
	if !errors.Is(err, context.Canceled) || err.Error() != "/stuck: read stopped: context canceled" {
		t.Fatalf("error %v", err)
	}
	close(unblock)
	within(t, "release", func() {
		if v := <-released; v != "file" {
			t.Errorf("released %q", v)
		}
	})
}

func TestReadDir(t *testing.T) {
	dir, _ := hostile(t)
	ctx := context.Background()
	entries, err := ReadDir(ctx, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "big dangling fifo folder good loop tofifo togood zero" {
		t.Errorf("entries %s", got)
	}
	if _, err := ReadDir(ctx, dir, 8); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 8 entries") {
		t.Errorf("over the bound: %v", err)
	}
	for name, msg := range map[string]string{"fifo": "not a folder (a named pipe)", "good": "not a folder (a regular file)", "zero": "not a folder (a device node)", "missing": "no such file"} {
		var err error
		within(t, "ReadDir "+name, func() { _, err = ReadDir(ctx, filepath.Join(dir, name), 10) })
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)+": "+msg) {
			t.Errorf("%s: %v, want %q", name, err, msg)
		}
	}
}

func TestOpenBound(t *testing.T) {
	dir, _ := hostile(t)
	if _, err := Open(context.Background(), filepath.Join(dir, "good"), 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("6-byte file with a bound of 5: %v", err)
	}
}

// Refusing a 400 MB file reads none of it: the memory a refusal costs does
// not grow with the file.
func BenchmarkRefuseHugeFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(400 << 20); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadFile(context.Background(), path, 1<<20); !errors.Is(err, ErrTooLarge) {
			b.Fatal(err)
		}
	}
}

// WithoutPath drops the path for a caller whose message names it, and
// keeps what the error is.
func TestWithoutPath(t *testing.T) {
	_, err := ReadFile(context.Background(), "/nonexistent/x", 10)
	short := WithoutPath(err)
	if short.Error() != "no such file or directory" || !errors.Is(short, fs.ErrNotExist) {
		t.Errorf("WithoutPath(%v) = %v", err, short)
	}
	other := errors.New("other")
	if WithoutPath(other) != other {
		t.Error("WithoutPath changed an error of another kind")
	}
}
