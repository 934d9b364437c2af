package supervise

import (
	"bytes"
	"log/slog"
	"sync"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
)

// maxLine caps one log line; longer output is split so a child printing
// without newlines cannot grow the daemon's memory.
const maxLine = 16 << 10

// lineWriter turns a child's output stream into log lines: each complete
// line goes to the unit's ring and to slog, and marks progress for the
// readiness stall timeout.
type lineWriter struct {
	stream string
	ring   *logring.Ring
	log    *slog.Logger
	clock  clock.Clock
	onLine func()

	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= maxLine {
				w.emit(w.buf[:maxLine])
				w.buf = append(w.buf[:0], w.buf[maxLine:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(w.buf)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush emits a trailing line without a newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
}

func (w *lineWriter) emit(b []byte) {
	text := string(bytes.TrimRight(b, "\r"))
	w.ring.Add(api.LogLine{Time: w.clock.Now(), Stream: w.stream, Text: text})
	w.log.Info(text, "stream", w.stream)
	if w.onLine != nil {
		w.onLine()
	}
}
