// Package logging builds the slog loggers of ttisd and of "ttisd serve":
// coloured text on a terminal, JSON lines into a pipe (the daemon re-logs a
// server's JSON lines at their level), and, when stderr is systemd's journal
// stream, lines with sd-daemon(3) priority prefixes so that
// "journalctl -p warning -u ttisd" selects by level. Every format prints a
// time.Duration as "1.5s", never as nanoseconds.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"
)

// Formats are the values of ttisd's log_format.
const (
	// FormatAuto is coloured text on a terminal, priority-prefixed text on
	// the journal and JSON otherwise.
	FormatAuto = "auto"
	FormatText = "text"
	FormatJSON = "json"
)

// Sink describes where log lines go, as New detects it from the writer.
type Sink struct {
	// Terminal: the writer is a terminal (colour, short timestamps).
	Terminal bool
	// Journal: the writer is systemd's journal stream; each line starts
	// with "<N>", its syslog priority, and carries no timestamp (the
	// journal stamps every entry itself).
	Journal bool
}

// New returns a logger writing to w in format at level, detecting a
// terminal or the journal stream when w is an *os.File.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var s Sink
	if f, ok := w.(*os.File); ok {
		s.Terminal = term.IsTerminal(int(f.Fd()))
		s.Journal = IsJournalStream(f, os.Getenv("JOURNAL_STREAM"))
	}
	return NewFor(w, s, format, level)
}

// NewFor is New with the sink given instead of detected.
func NewFor(w io.Writer, s Sink, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationsAsText}
	if s.Journal {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return durationsAsText(groups, a)
		}
		switch format {
		case FormatAuto, FormatText:
			return slog.New(newPrefixHandler(w, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, opts) })), nil
		case FormatJSON:
			return slog.New(newPrefixHandler(w, func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, opts) })), nil
		}
		return nil, badFormat(format)
	}
	switch format {
	case FormatAuto:
		if s.Terminal {
			return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly})), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case FormatText:
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.DateTime, NoColor: !s.Terminal})), nil
	}
	return nil, badFormat(format)
}

func badFormat(format string) error {
	return fmt.Errorf("log format %q: want auto, text or json", format)
}

// durationsAsText writes a time.Duration as its String form: slog's JSON
// handler would print nanoseconds, which nobody reads correctly at 3 a.m.
// (tint and slog's text handler already print the String form).
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
