package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"
)

// NewLogger returns ttisd's logger: coloured text (tint) when w is a
// terminal and format is "auto", JSON otherwise; "text" forces plain text.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	switch format {
	case "auto":
		if tty {
			return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly})), nil
		}
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})), nil
	case "text":
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.DateTime, NoColor: !tty})), nil
	}
	return nil, fmt.Errorf("log format %q: want auto, text or json", format)
}
