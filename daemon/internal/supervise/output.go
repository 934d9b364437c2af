package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
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
	level, msg, attrs, text := parseLine(bytes.TrimRight(b, "\r"))
	w.ring.Add(api.LogLine{Time: w.clock.Now(), Stream: w.stream, Text: text})
	w.log.Log(context.Background(), level, msg, append(attrs, slog.String("stream", w.stream))...)
	if w.onLine != nil {
		w.onLine()
	}
}

// parseLine understands the JSON lines slog writes ("ttisd serve" logs
// that way): the daemon re-logs them at their level with their attributes
// instead of nesting JSON in JSON, and the ring keeps a readable
// "LEVEL msg key=value" form. Any other line is logged as is, at INFO.
func parseLine(b []byte) (level slog.Level, msg string, attrs []any, text string) {
	level, msg, text = slog.LevelInfo, string(b), string(b)
	if len(b) < 2 || b[0] != '{' {
		return level, msg, nil, text
	}
	var rec map[string]any
	if json.Unmarshal(b, &rec) != nil {
		return level, msg, nil, text
	}
	m, ok := rec["msg"].(string)
	if !ok {
		return level, msg, nil, text
	}
	lv, _ := rec["level"].(string)
	if level.UnmarshalText([]byte(lv)) != nil {
		level = slog.LevelInfo
	}
	keys := make([]string, 0, len(rec))
	for k := range rec {
		switch k {
		case slog.TimeKey, slog.LevelKey, slog.MessageKey, "unit":
			// The daemon adds its own time and unit.
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(level.String())
	sb.WriteByte(' ')
	sb.WriteString(m)
	for _, k := range keys {
		v := rec[k]
		attrs = append(attrs, slog.Any(k, v))
		s, isString := v.(string)
		if !isString {
			enc, _ := json.Marshal(v)
			s = string(enc)
		} else if strings.ContainsAny(s, " \t\"=") {
			s = strconv.Quote(s)
		}
		fmt.Fprintf(&sb, " %s=%s", k, s)
	}
	return level, m, attrs, sb.String()
}
