package daemon

import (
	"io"
	"log/slog"

	"github.com/ttis-dev/ttis/runtime/logging"
)

// NewLogger returns ttisd's logger (see runtime/logging): coloured text on
// a terminal with format "auto", priority-prefixed lines on systemd's
// journal stream (so "journalctl -p warning -u ttisd" works), JSON
// otherwise; "text" and "json" force a format.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	return logging.New(w, format, level)
}
