package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
)

// IsJournalStream reports whether f is the stream systemd connected to the
// journal: JOURNAL_STREAM ("DEV:INODE", see systemd.exec(5)) names f's
// device and inode. A child that inherits the variable but writes into a
// pipe (a unit server under ttisd) does not match, and keeps JSON lines.
// (go-systemd's journal.StderrIsJournalStream asks the same about fd 2 only;
// this takes the writer the logger is given.)
func IsJournalStream(f *os.File, journalStream string) bool {
	if journalStream == "" || f == nil {
		return false
	}
	var dev, ino uint64
	if _, err := fmt.Sscanf(journalStream, "%d:%d", &dev, &ino); err != nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == dev && uint64(st.Ino) == ino
}

// Priority is the syslog priority that journald reads from a "<N>" line
// prefix (sd-daemon(3)).
func Priority(l slog.Level) int {
	switch {
	case l < slog.LevelInfo:
		return 7 // debug
	case l == slog.LevelInfo:
		return 6 // info
	case l < slog.LevelWarn:
		return 5 // notice: levels between info and warn
	case l < slog.LevelError:
		return 4 // warning
	case l < slog.LevelError+4:
		return 3 // err
	}
	return 2 // crit: levels above error
}

// prefixHandler puts "<N>" before each line an inner handler writes.
// slog's handlers write one record with one Write call; prefixHandler
// serialises Handle so that the shared writer knows the record's
// priority when that Write comes.
type prefixHandler struct {
	inner slog.Handler
	out   *prefixWriter
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte // of the record being handled; mu held
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(append(p.buf[:0], p.prefix...), b...)
	if _, err := p.w.Write(p.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

func newPrefixHandler(w io.Writer, inner func(io.Writer) slog.Handler) *prefixHandler {
	out := &prefixWriter{w: w}
	return &prefixHandler{inner: inner(out), out: out}
}

func (h *prefixHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *prefixHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.prefix = fmt.Appendf(h.out.prefix[:0], "<%d>", Priority(r.Level))
	return h.inner.Handle(ctx, r)
}

func (h *prefixHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &prefixHandler{inner: h.inner.WithAttrs(as), out: h.out}
}

func (h *prefixHandler) WithGroup(name string) slog.Handler {
	return &prefixHandler{inner: h.inner.WithGroup(name), out: h.out}
}
