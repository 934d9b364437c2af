// Package sdnotify tells systemd about ttisd's state (Type=notify): READY,
// RELOADING, STOPPING, STATUS lines and watchdog pings. Outside systemd
// (no NOTIFY_SOCKET) every call is a no-op.
package sdnotify

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends sd_notify messages. The zero value logs nothing.
type Notifier struct {
	Logger *slog.Logger

	failOnce sync.Once
}

func (n *Notifier) send(state string) {
	// unsetEnvironment=false: unsetting NOTIFY_SOCKET would silence every
	// later notification. Children get a scrubbed environment instead.
	if _, err := daemon.SdNotify(false, state); err != nil && n.Logger != nil {
		n.failOnce.Do(func() { n.Logger.Warn("sd_notify failed", "err", err) })
	}
}

// Ready reports that the daemon serves its control API, with a status line.
func (n *Notifier) Ready(status string) {
	n.send(daemon.SdNotifyReady + "\nSTATUS=" + oneLine(status))
}

// Reloading starts a reload; follow it with Ready. MONOTONIC_USEC goes in
// the same datagram, as Type=notify-reload requires.
func (n *Notifier) Reloading() {
	n.send(daemon.SdNotifyReloading + "\n" + strings.TrimSuffix(daemon.SdNotifyMonotonicUsec(), "\n"))
}

// Stopping reports that shutdown has begun.
func (n *Notifier) Stopping() { n.send(daemon.SdNotifyStopping) }

// Status sets the one-line status systemctl status shows.
func (n *Notifier) Status(status string) { n.send("STATUS=" + oneLine(status)) }

// Watchdog pings the service watchdog.
func (n *Notifier) Watchdog() { n.send(daemon.SdNotifyWatchdog) }

// WatchdogInterval returns how often to ping: half of WATCHDOG_USEC, or 0
// when systemd runs no watchdog for this process.
func WatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return 0
	}
	return d / 2
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
