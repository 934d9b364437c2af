// Package daemon is ttisd's supervisor mode: it watches the units folder,
// keeps one server process per enabled unit running, and serves the control
// API on a unix socket. cmd/ttisd is a thin main around Run.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/config"
	"github.com/ttis-dev/ttis/daemon/internal/control"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/metrics"
	"github.com/ttis-dev/ttis/daemon/internal/orphans"
	"github.com/ttis-dev/ttis/daemon/internal/reconcile"
	"github.com/ttis-dev/ttis/daemon/internal/sdnotify"
	"github.com/ttis-dev/ttis/daemon/internal/supervise"
	"github.com/ttis-dev/ttis/daemon/internal/watch"
	"github.com/ttis-dev/ttis/daemon/schedule"
	"github.com/ttis-dev/ttis/runtime/device"
	"github.com/ttis-dev/ttis/units"
)

// Config is ttisd's configuration (the TOML file /etc/ttis/ttisd.toml).
type Config = config.Config

// DefaultConfigPath is where ttisd reads its configuration by default.
const DefaultConfigPath = config.DefaultPath

// DefaultConfig returns the configuration of a system-wide install.
func DefaultConfig() Config { return config.Default() }

// LoadConfig reads a configuration file over the defaults; a missing file
// is an error only when required.
func LoadConfig(path string, required bool) (Config, error) { return config.Load(path, required) }

// Options are the parts of a daemon run that are not configuration.
type Options struct {
	Version string
	Logger  *slog.Logger
	// Workflow runs a unit's scheduled workflows; nil runs them with
	// bench/release into the results store (schedule.WorkflowRunner).
	Workflow schedule.RunFunc
}

// Run runs the daemon until ctx is cancelled (SIGTERM), then stops every
// unit, waits until their processes are gone and returns nil (with
// live_restore it leaves them running for the next ttisd instead). SIGHUP
// re-reads the units folder.
//
// Run returns within the daemon's stop timeout of ctx's end, whatever a job
// is stuck on: each server gets its unit's stop_timeout before SIGKILL,
// and a scheduled run still going gets the longest of them to record
// itself as interrupted, after which it is left behind (its manifest then
// reads interrupted, its process being gone).
func Run(ctx context.Context, cfg Config, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Abs(); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	runsDir := filepath.Join(cfg.StateDir, "runs")
	if err := os.MkdirAll(runsDir, 0o750); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	exe := cfg.ServerExecutable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find the ttisd executable for unit servers: %w", err)
		}
	}

	ln, err := control.Listen(cfg.Socket, cfg.SocketGroup, log)
	if err != nil {
		return err
	}
	notify := &sdnotify.Notifier{Logger: log}

	// Only now, as the one daemon on this socket: find the servers an
	// earlier ttisd left running (crashed, killed or upgraded).
	servers := orphans.Registry{Dir: filepath.Join(cfg.StateDir, "servers")}
	leftovers, err := servers.Servers()
	if err != nil {
		log.Warn("cannot check for servers left by an earlier ttisd", "err", err)
	}

	d := &daemon{
		cfg: cfg, log: log, notify: notify, version: o.Version,
		started: time.Now(), pid: os.Getpid(), runsDir: runsDir,
		reloads: make(chan reloadRequest),
	}
	m := metrics.New(d, o.Version)

	// Units run under their own context: on shutdown the API closes first,
	// then every unit is stopped in parallel.
	unitsCtx, stopUnits := context.WithCancel(context.WithoutCancel(ctx))
	defer stopUnits()
	resetter := &device.Resetter{Command: cfg.ResetCommand}
	rec := reconcile.New(unitsCtx, reconcile.Options{
		Dir: cfg.UnitsDir,
		Deps: supervise.Deps{
			// Servers write their output to files in the state folder, so
			// they outlive this daemon (see supervise.ExecStarter).
			Starter: supervise.ExecStarter{Path: exe, Args: serveArgs(cfg.ModelFolders()), LogDir: filepath.Join(cfg.StateDir, "server-output")},
			Reset:   resetter.Reset,
		},
		// Servers run the validated text, even after the file breaks, and
		// a unit broken while no daemon ran runs its last good version.
		SnapshotDir: filepath.Join(cfg.StateDir, "unit-snapshots"),
		LogLines:    cfg.LogLines,
		Logger:      log,
		Running: func(unit string, pid int, spec supervise.Spec) {
			if err := servers.Record(unit, pid, spec.Listen, spec.UnitFile); err != nil {
				log.Warn("cannot record server pid", "unit", unit, "pid", pid, "err", err)
			}
		},
		Ended: servers.Forget,
		// The pre-start checks ttisd serve and ttisctl validate run too:
		// a unit that cannot start is failed with the reason, not
		// restarted until its start limit.
		Preflight: func(u *units.Unit) error { return units.Preflight(u, units.Host{ModelDirs: cfg.ModelFolders()}) },
		Hooks: reconcile.Hooks{
			Applied: func(unit string, k reconcile.Kind) { m.Applied(unit, k.String()) },
			Error:   m.Error,
		},
	})
	d.rec = rec
	// Adopt what runs a unit's last good version; stop the rest before
	// the first pass needs their ports and chips.
	rejected, why := rec.Restore(ctx, leftovers)
	for i, l := range rejected {
		log.Warn("stopping a server left running by an earlier ttisd", "unit", l.Unit, "pid", l.PID, "reason", why[i])
	}
	servers.Stop(rejected, 10*time.Second)

	// [[schedule]] runs; see schedules.go. They end first on shutdown.
	schedCtx, stopSchedules := context.WithCancel(unitsCtx)
	defer stopSchedules()
	schedLoopDone := d.startSchedules(schedCtx, o.Workflow)
	apiDone := make(chan struct{})
	limits := controlLimits(cfg.Control, log)
	srv := control.NewHTTPServer((&control.Server{Backend: d, Logger: log, Done: apiDone, Observe: m.Control, Limits: limits}).Handler())
	serveErr := make(chan error, 1)
	capped := control.NewListener(ln, limits.Connections, func() { releaseMemory(log) })
	go func() { serveErr <- srv.Serve(capped) }()
	stopMetrics, err := serveMetrics(cfg.MetricsListen, m, log)
	if err != nil {
		return err
	}
	defer stopMetrics()

	triggers := make(chan string, 1)
	w := &watch.Watcher{Dir: cfg.UnitsDir, Rescan: cfg.RescanInterval.Duration, Logger: log}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- w.Run(watchCtx, func(reason string) {
			select {
			case triggers <- reason:
			default: // a pass is already due; it reads everything anyway
			}
		})
	}()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	log.Info("ttisd started", "version", o.Version, "units_dir", cfg.UnitsDir, "socket", cfg.Socket, "state_dir", cfg.StateDir, "server", exe)
	loopErr := d.loop(ctx, triggers, hup, serveErr)

	// Shutdown: stop the scheduled runs and reading the folder, close the
	// API, stop every unit (or, with live_restore, leave the servers to the
	// next ttisd), and wait for the scheduled runs no longer than the stop
	// timeout.
	notify.Stopping()
	stopTimeout := d.stopTimeout()
	schedDeadline := time.Now().Add(stopTimeout)
	stopSchedules()
	if cfg.LiveRestore {
		log.Info("ttisd stopping; live_restore leaves the servers running for the next ttisd")
		rec.Detach(context.WithoutCancel(ctx))
	} else {
		log.Info("ttisd stopping; stopping every unit")
	}
	stopWatch()
	<-watchDone
	close(apiDone)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()
	stopUnits()
	rec.Shutdown(context.Background())
	<-schedLoopDone
	wctx, cancelWait := context.WithDeadline(context.Background(), schedDeadline)
	if stuck := d.sched.Wait(wctx); len(stuck) > 0 {
		log.Error("scheduled runs did not stop within the stop timeout; exiting without them (their runs read interrupted)",
			"units", stuck, "stop_timeout", stopTimeout.String())
	}
	cancelWait()
	log.Info("ttisd stopped")
	return loopErr
}

// controlLimits sizes the control socket's limits to the descriptor limit,
// keeping cfg.FDReserve descriptors for the supervisor. Go has already
// raised the soft RLIMIT_NOFILE to the hard limit at start (since Go 1.19;
// children get the original back), so ttisd reads it and never sets it:
// setting it would make Go hand the raised limit to the servers too.
func controlLimits(cfg config.Control, log *slog.Logger) control.Limits {
	want := control.Limits{Connections: cfg.MaxConnections, Followers: cfg.MaxFollowers, Actions: cfg.MaxActions, Queries: cfg.MaxQueries}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the descriptor limit; the control socket keeps its configured limits", "err", err)
		return want
	}
	got, note := control.Size(want, lim.Cur, cfg.FDReserve)
	if note != "" {
		log.Warn("control socket limits lowered: " + note)
	}
	log.Info("control socket limits", "connections", got.Connections, "followers", got.Followers, "actions", got.Actions,
		"queries", got.Queries, "fd_limit", lim.Cur, "fd_reserve", cfg.FDReserve)
	return got
}

// releaseMemory hands back to the system what a burst of control
// connections used, once they have closed. Without it the memory stays for
// minutes or more: an idle daemon allocates too little to start a
// collection, and the heap goal set while the burst was open keeps the
// background scavenger from returning the pages. Two collections, because
// the first only moves net/http's pooled per-connection buffers into
// sync.Pool's victim cache and the second frees them; FreeOSMemory's own
// collection is the second.
func releaseMemory(log *slog.Logger) {
	runtime.GC()
	debug.FreeOSMemory()
	log.Debug("returned the memory of a burst of control connections to the system")
}

// stopTimeout is how long the daemon's shutdown may take: the longest
// restart.stop_timeout of its units (the default when it has none).
func (d *daemon) stopTimeout() time.Duration {
	t := units.DefaultStopTimeout
	if us := d.rec.GoodUnits(); len(us) > 0 {
		t = 0
		for _, u := range us {
			t = max(t, u.Restart.StopTimeout.Duration)
		}
	}
	return t
}

// serveMetrics serves GET /metrics on listen until the returned func is
// called; an empty listen serves nothing.
func serveMetrics(listen string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	if listen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics_listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

type reloadRequest struct {
	ctx   context.Context
	reply chan api.ReloadResult
}

// daemon implements the control API's backend and owns the event loop.
type daemon struct {
	cfg     Config
	rec     *reconcile.Reconciler
	log     *slog.Logger
	notify  *sdnotify.Notifier
	version string
	started time.Time
	pid     int
	runsDir string
	reloads chan reloadRequest
	sched   *schedule.Scheduler
}

// loop runs every reconcile pass (folder changes, SIGHUP, API reloads) and
// pings the systemd watchdog from the same goroutine, so a wedged pass
// stops the pings.
func (d *daemon) loop(ctx context.Context, triggers <-chan string, hup <-chan os.Signal, serveErr <-chan error) error {
	var wdC <-chan time.Time
	if iv := sdnotify.WatchdogInterval(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		wdC = t.C
	}
	status := time.NewTicker(5 * time.Second)
	defer status.Stop()
	ready := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-serveErr:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("control API: %w", err)
		case reason := <-triggers:
			d.log.Debug("reading units folder", "reason", reason)
			d.rec.Reconcile(ctx)
			d.updateSchedules()
			if !ready {
				// The socket listens and the first pass has started every
				// unit: systemd may consider ttisd started. Models load
				// afterwards; their readiness is per unit.
				d.notify.Ready(d.rec.Summary())
				ready = true
			} else {
				d.notify.Status(d.rec.Summary())
			}
		case <-hup:
			d.log.Info("SIGHUP: reloading units")
			d.reload(ctx)
		case req := <-d.reloads:
			req.reply <- d.reload(req.ctx)
		case <-wdC:
			d.notify.Watchdog()
		case <-status.C:
			d.notify.Status(d.rec.Summary())
		}
	}
}

func (d *daemon) reload(ctx context.Context) api.ReloadResult {
	d.notify.Reloading()
	res := d.rec.Reconcile(ctx)
	d.updateSchedules()
	d.notify.Ready(d.rec.Summary())
	return res
}

// Info implements control.Backend.
func (d *daemon) Info() api.Info {
	return api.Info{
		Version: d.version, PID: d.pid, Started: d.started,
		UnitsDir: d.cfg.UnitsDir, StateDir: d.cfg.StateDir, Socket: d.cfg.Socket, RunsDir: d.runsDir,
		HubCache: d.cfg.HubCacheDir(), HFEndpoint: d.cfg.Endpoint(), ModelDirs: d.cfg.ModelFolders(),
		LastScan: d.rec.LastScan(),
	}
}

// List implements control.Backend.
func (d *daemon) List() api.UnitList { return d.rec.List() }

// Schedules implements metrics.Source.
func (d *daemon) Schedules() []schedule.Fire {
	if d.sched == nil {
		return nil
	}
	return d.sched.Next()
}

// Unit implements control.Backend: the reconciler's detail plus the unit's
// schedules.
func (d *daemon) Unit(name string, lines int) (api.UnitDetail, error) {
	u, err := d.rec.Unit(name, lines)
	if err != nil || d.sched == nil {
		return u, err
	}
	for _, f := range d.sched.Next() {
		if f.Unit == name {
			u.Schedules = append(u.Schedules, api.Schedule{Workflow: f.Workflow, Calendar: f.Calendar, Timezone: f.Timezone,
				Limit: f.Limit, Next: f.Next, Running: f.Running, LastFire: f.LastFire, LastResult: f.LastResult})
		}
	}
	return u, nil
}

// Start implements control.Backend.
func (d *daemon) Start(ctx context.Context, name string) error { return d.rec.Start(ctx, name) }

// Stop implements control.Backend.
func (d *daemon) Stop(ctx context.Context, name string) error { return d.rec.Stop(ctx, name) }

// Restart implements control.Backend.
func (d *daemon) Restart(ctx context.Context, name string) error { return d.rec.Restart(ctx, name) }

// Ring implements control.Backend.
func (d *daemon) Ring(name string) (*logring.Ring, error) { return d.rec.Ring(name) }

// Reload implements control.Backend: the pass runs on the event loop, and
// the call returns when it is done.
func (d *daemon) Reload(ctx context.Context) (api.ReloadResult, error) {
	req := reloadRequest{ctx: ctx, reply: make(chan api.ReloadResult, 1)}
	select {
	case d.reloads <- req:
	case <-ctx.Done():
		return api.ReloadResult{}, ctx.Err()
	}
	select {
	case res := <-req.reply:
		return res, nil
	case <-ctx.Done():
		return api.ReloadResult{}, ctx.Err()
	}
}

// Devices implements control.Backend: the host's chips and the units that
// claim them (a claimed chip the host lacks is listed as not present).
func (d *daemon) Devices() api.Devices {
	out := api.Devices{Root: d.cfg.DeviceRoot, Chips: []api.Chip{}}
	chips, err := device.Discover(d.cfg.DeviceRoot)
	if err != nil {
		out.Error = err.Error()
	}
	holders := d.rec.Holders()
	seen := map[int]bool{}
	for _, c := range chips {
		seen[c.ID] = true
		out.Chips = append(out.Chips, api.Chip{ID: c.ID, Path: c.Path, Present: true, Holder: holders[c.ID]})
	}
	for id, h := range holders {
		if !seen[id] {
			out.Chips = append(out.Chips, api.Chip{ID: id, Present: false, Holder: h})
		}
	}
	slices.SortFunc(out.Chips, func(a, b api.Chip) int { return a.ID - b.ID })
	return out
}

// serveArgs are the arguments before a unit file's path: the server opens
// model files only inside the configured model folders.
func serveArgs(modelDirs []string) []string {
	args := []string{"serve"}
	for _, d := range modelDirs {
		args = append(args, "--model-dir", d)
	}
	return args
}
