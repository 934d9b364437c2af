// Package hardened reads files that another party can write (unit files,
// the results store, snapshots, server records, datasets, caches, secrets)
// without ever blocking on them or reading more than the caller allows.
//
// Opening a named pipe blocks until a writer comes, reading a device node
// such as /dev/zero never ends, and a file of hundreds of megabytes costs
// its size in memory. So a path is checked with stat first (which follows
// symbolic links, as every reader of ours always has; a link loop fails
// there), refused unless it is a regular file within the caller's bound,
// opened non-blocking in case it was swapped for a pipe in between, checked
// again on the open descriptor, and read up to the bound.
//
// Every call takes a context: when it ends first (a deadline, a signal),
// the call returns at once with an error that says so. A read stuck in the
// kernel (a hung network file system) cannot be interrupted; it is left to
// finish in the background, and closes its file when it does.
//
// Symlinks are followed, as the unit loader always has (a Kubernetes
// ConfigMap mounts files as links); what they point at is checked.
package hardened

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (a folder, a named pipe, a socket, a device node), or, for ReadDir,
// not a folder.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file over the caller's bound,
// or a folder with more entries than it allows.
var ErrTooLarge = errors.New("over the size limit")

// Error is a refused or failed read of Path.
type Error struct {
	// Path is the file or folder as the caller named it.
	Path string
	// Reason says what is wrong, without the path: "not a regular file (a
	// named pipe)", "419430400 bytes, larger than the 1048576-byte limit",
	// "no such file or directory".
	Reason string
	// Size is the file's size when the file was refused for it, else -1
	// (also when the file grew past the bound while it was read).
	Size int64
	// Err is ErrNotRegular, ErrTooLarge, the context's error, or the
	// system's error (errors.Is(err, fs.ErrNotExist) works through it).
	Err error
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

func (e *Error) Unwrap() error { return e.Err }

// WithoutPath is e for a caller whose message names the path already: its
// text is the reason alone, and it unwraps to e.Err.
func (e *Error) WithoutPath() error { return reason{e} }

type reason struct{ e *Error }

func (r reason) Error() string { return r.e.Reason }

func (r reason) Unwrap() error { return r.e.Err }

// WithoutPath returns err's reason alone when err is an *Error (see
// Error.WithoutPath), else err.
func WithoutPath(err error) error {
	var he *Error
	if errors.As(err, &he) {
		return he.WithoutPath()
	}
	return err
}

// ReadFile returns the content of the regular file at path, refusing a file
// of more than max bytes (max must be positive).
func ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	return withContext(ctx, path, func() ([]byte, error) { return readFile(ctx, path, max) }, nil)
}

// Open opens the regular file at path for reading, refusing a file of more
// than max bytes; the caller reads it (a dataset streamed, a file hashed)
// and closes it. The file may still grow after the check: a caller that
// reads it to the end bounds its reads itself (io.LimitReader).
func Open(ctx context.Context, path string, max int64) (*os.File, error) {
	return withContext(ctx, path, func() (*os.File, error) {
		f, _, err := open(path, max)
		return f, err
	}, func(f *os.File) { f.Close() })
}

// ReadDir lists the folder at path as os.ReadDir does (sorted by name),
// refusing anything but a folder (a named pipe in its place would block
// os.ReadDir) and a folder of more than max entries.
func ReadDir(ctx context.Context, path string, max int) ([]os.DirEntry, error) {
	return withContext(ctx, path, func() ([]os.DirEntry, error) { return readDir(path, max) }, nil)
}

// withContext runs f, returning early when ctx ends first; the result f
// gives after that is handed to release (a file to close).
func withContext[T any](ctx context.Context, path string, f func() (T, error), release func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, stopped(path, err)
	}
	if ctx.Done() == nil {
		return f() // nothing can end this call early
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if release != nil {
			go func() {
				if r := <-ch; r.err == nil {
					release(r.v)
				}
			}()
		}
		return zero, stopped(path, ctx.Err())
	}
}

func stopped(path string, err error) error {
	return &Error{Path: path, Reason: "read stopped: " + err.Error(), Size: -1, Err: err}
}

// fail wraps a system error, dropping the *PathError whose path the
// message already starts with.
func fail(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{Path: path, Reason: err.Error(), Size: -1, Err: err}
}

// open checks, opens and checks again; the file is open only when the
// error is nil.
func open(path string, max int64) (*os.File, os.FileInfo, error) {
	if max <= 0 {
		return nil, nil, fmt.Errorf("%s: read with a bound of %d bytes: the bound must be positive", path, max)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fail(path, err)
	}
	if err := checkFile(path, st, max); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fail(path, err)
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, fail(path, err)
	}
	if err := checkFile(path, st, max); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// checkFile refuses anything but a regular file of at most max bytes,
// naming what it is so that the operator knows what to remove.
func checkFile(path string, st os.FileInfo, max int64) error {
	if !st.Mode().IsRegular() {
		return &Error{Path: path, Reason: "not a regular file (" + Kind(st.Mode()) + ")", Size: -1, Err: ErrNotRegular}
	}
	if st.Size() > max {
		return &Error{Path: path, Reason: fmt.Sprintf("%d bytes, larger than the %d-byte limit", st.Size(), max), Size: st.Size(), Err: ErrTooLarge}
	}
	return nil
}

// Kind names what a file mode is, in words: "a regular file", "a folder",
// "a named pipe", "a socket", "a device node", "a symbolic link".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device node"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "mode " + m.Type().String()
	}
}

// chunk is how much is read between checks of the context, so that a read
// the caller gave up on stops soon after.
const chunk = 1 << 20

func readFile(ctx context.Context, path string, max int64) ([]byte, error) {
	f, st, err := open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size stat gave, plus one byte to see the end without growing; a
	// file that says 0 bytes (some kernel files) starts small.
	buf := make([]byte, 0, min(st.Size(), max)+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), max+1-int64(len(buf)))))
		}
		end := min(cap(buf), len(buf)+chunk)
		n, err := f.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, &Error{Path: path, Reason: fmt.Sprintf("larger than the %d-byte limit (it grew while it was read)", max), Size: -1, Err: ErrTooLarge}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fail(path, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, stopped(path, err)
		}
	}
}

func readDir(path string, max int) ([]os.DirEntry, error) {
	if max <= 0 {
		return nil, fmt.Errorf("%s: list with a bound of %d entries: the bound must be positive", path, max)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fail(path, err)
	}
	if !st.IsDir() {
		return nil, &Error{Path: path, Reason: "not a folder (" + Kind(st.Mode()) + ")", Size: -1, Err: ErrNotRegular}
	}
	// O_DIRECTORY: a pipe swapped in after the stat fails to open instead
	// of blocking.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail(path, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(max + 1)
	if err != nil && err != io.EOF {
		return nil, fail(path, err)
	}
	if len(entries) > max {
		return nil, &Error{Path: path, Reason: fmt.Sprintf("more than %d entries", max), Size: -1, Err: ErrTooLarge}
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}
