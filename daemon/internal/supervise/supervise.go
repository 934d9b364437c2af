// Package supervise keeps one unit's server process running the way systemd
// keeps a Type=notify service running: readiness from the server's /health,
// a restart policy with exponential back-off, a start limit, and a stop that
// sends SIGTERM and then SIGKILL to the whole process group. It can also
// hand a running server a live reload (SIGHUP), adopt a server an earlier
// daemon started, and let a server outlive the daemon (Detach).
//
// One goroutine (Run) owns the process and every state change; the methods
// send it commands, so no two actions on a unit ever overlap.
package supervise

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/units"
)

// Spec is a unit's valid version as the supervisor runs it. The supervisor
// reads the unit's Name, Listen (probed at /health), Chips (reset before an
// automatic restart when restart.reset_device is set) and Restart policy;
// a new setting of the supervisor is a field of units.Unit, read here.
type Spec struct {
	units.Unit
	// UnitFile is handed to the server process as its argument: the unit's
	// file, or the daemon's snapshot of the validated text.
	UnitFile string
	// Hash identifies the unit text; a new hash means a new version.
	Hash string
	// Check runs before every start of the server: ttisd's pre-start
	// checks (units.Preflight). An error fails the unit with it as the
	// reason and no restart, since every retry would fail the same way
	// until the operator fixes the host and starts the unit again.
	Check func() error
}

// withDefaults fills zero restart settings. The units package fills them
// already when it reads a file; these keep the supervisor safe on its own.
func (s Spec) withDefaults() Spec {
	r := &s.Restart
	if r.Policy == "" {
		r.Policy = units.DefaultRestartPolicy
	}
	if r.Delay.Duration == 0 {
		r.Delay.Duration = units.DefaultRestartDelay
	}
	if r.MaxDelay.Duration < r.Delay.Duration {
		r.MaxDelay.Duration = max(r.Delay.Duration, units.DefaultRestartMaxDelay)
	}
	if r.Burst == 0 {
		r.Burst = units.DefaultRestartBurst
	}
	if r.Interval.Duration == 0 {
		r.Interval.Duration = units.DefaultRestartInterval
	}
	if r.ReadyTimeout.Duration == 0 {
		// The longest runtime's default (vllm): a unit the units
		// package did not fill may be a slow one.
		r.ReadyTimeout.Duration = units.DefaultReadyTimeoutVllm
	}
	if r.StopTimeout.Duration == 0 {
		r.StopTimeout.Duration = units.DefaultStopTimeout
	}
	return s
}

// Probe reports nil when the server at listen is ready to serve.
type Probe func(ctx context.Context, listen string) error

// Resetter resets chips before a restart (tt-smi -r by default).
type Resetter func(ctx context.Context, chips []int) error

// Deps are the supervisor's edges to the outside world.
type Deps struct {
	Starter Starter
	// Clock drives restart delays, the start-limit window and timeouts.
	// Nil means the wall clock.
	Clock clock.Clock
	// Probe checks readiness; nil means HTTP GET http://listen/health,
	// which also reads the server's workers (Status.Workers).
	Probe Probe
	// PollInterval is how often readiness is probed; zero means 50ms.
	PollInterval time.Duration
	// LiveInterval is how often an active server's /health is checked
	// (a hung device or a wedged server answers nothing but does not
	// exit); zero means 10s, negative turns the check off.
	LiveInterval time.Duration
	// LiveTimeout bounds one such check; zero means 5s.
	LiveTimeout time.Duration
	// LiveFailures checks failing in a row count as a failure of the
	// server (result "watchdog"), handled by the restart policy; zero
	// means 3.
	LiveFailures int
	// Reset runs before an automatic restart of a unit that asks for it.
	Reset Resetter
	// Logger receives the server's output and the supervisor's events.
	Logger *slog.Logger
	// Ring keeps recent lines; nil creates one of 1000 lines.
	Ring *logring.Ring
	// Running and Ended, when set, are told about every server process:
	// Running each time one starts, or takes a live reload, with the spec
	// it now runs (the daemon records it, to adopt the server after its
	// own restart), Ended when it is gone.
	Running func(pid int, spec Spec)
	Ended   func(pid int)
}

// Status is a snapshot of a unit's process state.
type Status struct {
	State    string
	SubState string
	Result   string
	PID      int
	Restarts int
	Since    time.Time
	LastExit string
	// LastError is the most recent failure in words.
	LastError string
	Spec      Spec
	// RestartsTotal counts automatic restarts since the supervisor was
	// made; unlike Restarts, a manual start or an edit never resets it.
	RestartsTotal int
	// LastStartDuration is how long the last start took to be ready.
	LastStartDuration time.Duration
	// Adopted is set while the process is one an earlier daemon started.
	Adopted bool
	// Workers is what the server's last passing health check said about
	// its device workers (runtime.HeaderWorkers), "" when it says nothing.
	Workers string
}

type cmdKind int

const (
	cmdStart cmdKind = iota
	cmdStop
	cmdRestart
	cmdUpdate
	cmdRetune
	cmdReload
	cmdDetach
)

type command struct {
	kind cmdKind
	spec Spec
	done chan struct{}
}

// Supervisor runs one unit. Create it with New, run Run in a goroutine and
// drive it with Start, Stop, Restart and Update.
type Supervisor struct {
	deps  Deps
	log   *slog.Logger
	ring  *logring.Ring
	cmds  chan command
	doneC chan struct{}

	mu     sync.Mutex
	status Status

	// Owned by the Run goroutine.
	spec         Spec
	want         bool
	proc         Process
	exitC        chan Exit
	outs         []*lineWriter
	starts       []time.Time
	failures     int // consecutive failures, for back-off
	restartTimer clock.Timer
	readyTimer   clock.Timer
	pollTicker   *time.Ticker
	liveTicker   *time.Ticker
	liveFails    int
	probeC       chan probeResult
	probing      bool
	hupPending   bool // a live reload waits for the server to be ready
	detached     bool // Run ends without stopping the process
	// blind is set while probes fail for want of the daemon's own
	// resources (see ownFailure); sightedAt is when the last such episode
	// ended, from which the ready timeout counts again.
	blind     bool
	sightedAt time.Time
	// startBlocked is set while starts fail for want of the daemon's own
	// resources.
	startBlocked bool
	startedAt    time.Time
	lastOutput   atomic.Int64 // unix nanos of the clock at the last output line
}

// New returns a supervisor for spec; it does nothing until Run and Start.
func New(spec Spec, deps Deps) *Supervisor {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.PollInterval == 0 {
		deps.PollInterval = 50 * time.Millisecond
	}
	if deps.LiveInterval == 0 {
		deps.LiveInterval = 10 * time.Second
	}
	if deps.LiveTimeout == 0 {
		deps.LiveTimeout = 5 * time.Second
	}
	if deps.LiveFailures == 0 {
		deps.LiveFailures = 3
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Ring == nil {
		deps.Ring = logring.New(1000)
	}
	spec = spec.withDefaults()
	s := &Supervisor{
		deps:  deps,
		log:   deps.Logger.With("unit", spec.Name),
		ring:  deps.Ring,
		cmds:  make(chan command),
		doneC: make(chan struct{}),
		spec:  spec,
	}
	s.status = Status{State: api.StateInactive, SubState: api.SubDead, Since: deps.Clock.Now(), Spec: spec}
	return s
}

// Ring returns the unit's recent log lines.
func (s *Supervisor) Ring() *logring.Ring { return s.ring }

// Status returns a snapshot of the unit's state.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Spec.Chips = slices.Clone(st.Spec.Chips)
	return st
}

// Done is closed when Run has returned.
func (s *Supervisor) Done() <-chan struct{} { return s.doneC }

// Start asks for the unit to run. A failed unit is reset first (like
// "systemctl reset-failed" followed by "start").
func (s *Supervisor) Start(ctx context.Context) error { return s.send(ctx, command{kind: cmdStart}) }

// Stop stops the unit and returns when its process is gone.
func (s *Supervisor) Stop(ctx context.Context) error { return s.send(ctx, command{kind: cmdStop}) }

// Restart stops the process if one runs, resets the start limit and starts
// a new one.
func (s *Supervisor) Restart(ctx context.Context) error {
	return s.send(ctx, command{kind: cmdRestart})
}

// Update replaces the unit's spec; a wanted unit restarts with it.
func (s *Supervisor) Update(ctx context.Context, spec Spec) error {
	return s.send(ctx, command{kind: cmdUpdate, spec: spec.withDefaults()})
}

// Retune replaces the unit's spec without touching its process: the edit
// changed only what the supervisor itself uses (the restart policy).
func (s *Supervisor) Retune(ctx context.Context, spec Spec) error {
	return s.send(ctx, command{kind: cmdRetune, spec: spec.withDefaults()})
}

// Reload replaces the unit's spec and tells the running server to re-read
// its unit file (SIGHUP to the server process alone), which applies the
// settings a server takes live. A server still loading gets the signal
// once it is ready; it may already have read the new file by then.
func (s *Supervisor) Reload(ctx context.Context, spec Spec) error {
	return s.send(ctx, command{kind: cmdReload, spec: spec.withDefaults()})
}

// Detach makes Run, when its context ends, leave the process running
// instead of stopping it: the daemon exits for an upgrade and the next one
// adopts the server.
func (s *Supervisor) Detach(ctx context.Context) error { return s.send(ctx, command{kind: cmdDetach}) }

// Adopt makes the supervisor own a server process that an earlier daemon
// started: the unit is wanted, active when ready is set (the server
// answered /health) and activating otherwise (still loading: readiness is
// awaited as after a start), and the process is supervised like one
// started here. Call it before Run.
func (s *Supervisor) Adopt(pid int, start uint64, ready bool) error {
	ad, ok := s.deps.Starter.(Adopter)
	if !ok {
		return fmt.Errorf("unit %s: the starter cannot adopt processes", s.spec.Name)
	}
	out, errw := s.writers()
	p, err := ad.Adopt(s.spec, pid, start, out, errw)
	if err != nil {
		return fmt.Errorf("unit %s: adopt pid %d: %w", s.spec.Name, pid, err)
	}
	s.want = true
	now := s.deps.Clock.Now()
	s.attach(p, out, errw, now)
	s.note(fmt.Sprintf("Adopted server pid %d, started by an earlier ttisd.", pid))
	if ready {
		s.becameReady()
	} else {
		s.readyTimer = s.deps.Clock.NewTimer(s.spec.Restart.ReadyTimeout.Duration)
		s.pollTicker = time.NewTicker(s.deps.PollInterval)
		s.setState(api.StateActivating, api.SubStart, func(st *Status) { st.PID = pid })
	}
	s.mu.Lock()
	s.status.Adopted = true
	s.mu.Unlock()
	return nil
}

func (s *Supervisor) send(ctx context.Context, c command) error {
	c.done = make(chan struct{})
	select {
	case s.cmds <- c:
	case <-s.doneC:
		return fmt.Errorf("unit %s: supervisor has shut down", s.spec.Name)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run owns the unit until ctx is cancelled, then stops its process and
// returns.
func (s *Supervisor) Run(ctx context.Context) {
	defer close(s.doneC)
	for {
		select {
		case <-ctx.Done():
			s.want = false
			s.cancelRestart()
			if s.detached {
				s.stopProbes()
				return
			}
			if s.proc != nil {
				s.stopProcess()
				s.setState(api.StateInactive, api.SubDead, func(st *Status) { st.Result = api.ResultSuccess })
			}
			return
		case c := <-s.cmds:
			s.handle(c)
			close(c.done)
		case ex := <-s.exitC:
			s.exited(ex)
		case <-timerC(s.restartTimer):
			s.restartTimer = nil
			s.startProcess(ctx, true)
		case <-timerC(s.readyTimer):
			s.readyTimeout()
		case <-tickerC(s.pollTicker):
			if !s.probing {
				s.probing = true
				go s.probe(ctx, s.spec.Listen, time.Second, s.probeC)
			}
		case <-tickerC(s.liveTicker):
			if !s.probing {
				s.probing = true
				go s.probe(ctx, s.spec.Listen, s.deps.LiveTimeout, s.probeC)
			}
		case r := <-s.probeC:
			s.probing = false
			switch {
			case s.proc == nil:
			case ownFailure(r.err):
				s.cannotProbe(r.err)
			default:
				s.probedAgain()
				switch {
				case s.status.State == api.StateActivating && r.err == nil:
					s.becameReady()
				case s.status.State == api.StateActive:
					s.checkedLive(r)
				}
			}
		}
	}
}

func timerC(t clock.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

func tickerC(t *time.Ticker) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func (s *Supervisor) handle(c command) {
	switch c.kind {
	case cmdStart:
		if s.proc != nil {
			s.want = true
			return
		}
		s.want = true
		s.resetLimits()
		s.cancelRestart()
		s.startProcess(context.Background(), false)
	case cmdStop:
		s.want = false
		s.cancelRestart()
		s.stopProcess()
		s.setState(api.StateInactive, api.SubDead, func(st *Status) { st.Result = api.ResultSuccess })
		s.note("Stopped.")
	case cmdRestart:
		s.want = true
		s.cancelRestart()
		s.stopProcess()
		s.resetLimits()
		s.startProcess(context.Background(), false)
	case cmdDetach:
		s.detached = true
	case cmdRetune:
		s.setSpec(c.spec)
	case cmdReload:
		s.setSpec(c.spec)
		switch {
		case s.proc == nil:
			// The next start reads the new file.
		case s.status.State == api.StateActive:
			s.sighup()
		default:
			s.hupPending = true
		}
	case cmdUpdate:
		s.setSpec(c.spec)
		if !s.want {
			return
		}
		s.cancelRestart()
		s.stopProcess()
		s.resetLimits()
		s.startProcess(context.Background(), false)
	}
}

func (s *Supervisor) setSpec(spec Spec) {
	s.spec = spec
	s.mu.Lock()
	s.status.Spec = spec
	s.mu.Unlock()
}

// sighup tells the running server to re-read its unit file.
func (s *Supervisor) sighup() {
	s.hupPending = false
	pid := s.proc.Pid()
	if err := s.proc.SignalMain(syscall.SIGHUP); err != nil {
		s.log.Warn("live reload failed", "pid", pid, "err", err)
		s.note(fmt.Sprintf("Live reload of pid %d failed: %v", pid, err))
		return
	}
	s.note(fmt.Sprintf("Sent SIGHUP to pid %d: it re-reads the unit file and applies live settings.", pid))
	s.log.Info("server reloaded live", "pid", pid, "hash", short(s.spec.Hash))
	if s.deps.Running != nil {
		s.deps.Running(pid, s.spec)
	}
}

// resetLimits forgets earlier starts: a manual start or an edit gets a
// fresh start limit and back-off, as after "systemctl reset-failed".
func (s *Supervisor) resetLimits() {
	s.starts = nil
	s.failures = 0
	s.mu.Lock()
	s.status.Restarts = 0
	s.mu.Unlock()
}

func (s *Supervisor) cancelRestart() {
	if s.restartTimer != nil {
		s.restartTimer.Stop()
		s.restartTimer = nil
	}
}

func (s *Supervisor) startProcess(ctx context.Context, auto bool) {
	if s.spec.Check != nil {
		if err := s.spec.Check(); err != nil {
			s.want = false
			msg := fmt.Sprintf("pre-start check failed: %s; fix it, then run \"ttisctl start %s\"", strings.ReplaceAll(err.Error(), "\n", "; "), s.spec.Name)
			s.setState(api.StateFailed, api.SubFailed, func(st *Status) {
				st.Result = api.ResultPreStart
				st.LastError = msg
				st.PID = 0
			})
			s.note("Failed: " + msg)
			s.log.Error("unit failed", "reason", msg)
			return
		}
	}
	now := s.deps.Clock.Now()
	r := s.spec.Restart
	// Start limit: Burst starts within Interval and the unit gives up.
	cutoff := now.Add(-r.Interval.Duration)
	s.starts = slices.DeleteFunc(s.starts, func(t time.Time) bool { return !t.After(cutoff) })
	if r.Burst > 0 && len(s.starts) >= r.Burst {
		s.want = false
		msg := fmt.Sprintf("start limit hit: %d starts within %s; run \"ttisctl restart %s\" or edit the unit", len(s.starts), r.Interval.Duration, s.spec.Name)
		s.setState(api.StateFailed, api.SubFailed, func(st *Status) {
			st.Result = api.ResultStartLimitHit
			st.LastError = msg
			st.PID = 0
		})
		s.note("Failed: " + msg)
		s.log.Error("unit failed", "reason", msg)
		return
	}
	s.starts = append(s.starts, now)

	if auto && r.ResetDevice && len(s.spec.Chips) > 0 && s.deps.Reset != nil {
		s.setState(api.StateActivating, api.SubReset, nil)
		s.note(fmt.Sprintf("Resetting chips %v before restart.", s.spec.Chips))
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := s.deps.Reset(rctx, s.spec.Chips)
		cancel()
		if err != nil {
			s.note("Device reset failed: " + err.Error())
			s.log.Error("device reset failed", "chips", s.spec.Chips, "err", err)
			s.mu.Lock()
			s.status.LastError = "device reset failed: " + err.Error()
			s.mu.Unlock()
		}
	}

	out, errw := s.writers()
	proc, err := s.deps.Starter.Start(s.spec, out, errw)
	if err != nil && ownFailure(err) {
		s.startDeferred(err)
		return
	}
	if err != nil {
		msg := "start failed: " + err.Error()
		s.note(msg)
		s.log.Error("start failed", "err", err)
		s.mu.Lock()
		s.status.LastError = msg
		s.mu.Unlock()
		s.afterEnd(false, api.ResultResources)
		return
	}
	if s.startBlocked {
		s.startBlocked = false
		s.log.Info("server starts again")
	}
	s.attach(proc, out, errw, now)
	s.readyTimer = s.deps.Clock.NewTimer(r.ReadyTimeout.Duration)
	s.pollTicker = time.NewTicker(s.deps.PollInterval)
	if s.deps.Running != nil {
		s.deps.Running(proc.Pid(), s.spec)
	}
	s.setState(api.StateActivating, api.SubStart, func(st *Status) { st.PID = proc.Pid() })
	s.note(fmt.Sprintf("Started server, pid %d.", proc.Pid()))
	s.log.Info("server started", "pid", proc.Pid(), "hash", short(s.spec.Hash))
}

// writers returns the line writers of a new process's stdout and stderr.
func (s *Supervisor) writers() (stdout, stderr *lineWriter) {
	stdout = &lineWriter{stream: "stdout", ring: s.ring, log: s.log, clock: s.deps.Clock, onLine: s.markOutput}
	stderr = &lineWriter{stream: "stderr", ring: s.ring, log: s.log, clock: s.deps.Clock, onLine: s.markOutput}
	return stdout, stderr
}

// attach makes p the unit's process and starts waiting for its exit.
func (s *Supervisor) attach(p Process, out, errw *lineWriter, now time.Time) {
	s.proc, s.outs = p, []*lineWriter{out, errw}
	s.exitC = make(chan Exit, 1)
	go func(p Process, c chan<- Exit) { c <- p.Wait() }(p, s.exitC)
	s.startedAt = now
	s.lastOutput.Store(now.UnixNano())
	s.probeC = make(chan probeResult, 1)
	s.probing = false
	s.hupPending = false
	s.mu.Lock()
	s.status.Adopted = false
	s.mu.Unlock()
}

func (s *Supervisor) markOutput() { s.lastOutput.Store(s.deps.Clock.Now().UnixNano()) }

func (s *Supervisor) becameReady() {
	s.stopProbes()
	s.failures = 0
	s.liveFails = 0
	if s.deps.LiveInterval > 0 {
		s.liveTicker = time.NewTicker(s.deps.LiveInterval)
	}
	took := s.deps.Clock.Now().Sub(s.startedAt)
	s.setState(api.StateActive, api.SubRunning, func(st *Status) {
		st.PID = s.proc.Pid()
		st.LastStartDuration = took
	})
	s.note("Server is ready.")
	s.log.Info("server ready", "pid", s.proc.Pid(), "after", took)
	if s.hupPending {
		s.sighup()
	}
}

// readyTimeout fires ReadyTimeout after the start, but the deadline is a
// stall timeout: output from the server (load progress) pushes it forward.
func (s *Supervisor) readyTimeout() {
	s.readyTimer = nil
	if s.proc == nil || s.status.State != api.StateActivating {
		return
	}
	rt := s.spec.Restart.ReadyTimeout.Duration
	// Time the daemon could not probe is not time the server stalled.
	if s.blind {
		s.readyTimer = s.deps.Clock.NewTimer(rt)
		return
	}
	since := time.Unix(0, s.lastOutput.Load())
	if s.sightedAt.After(since) {
		since = s.sightedAt
	}
	idle := s.deps.Clock.Now().Sub(since)
	if idle < rt {
		s.readyTimer = s.deps.Clock.NewTimer(rt - idle)
		return
	}
	msg := fmt.Sprintf("server not ready: no health and no output for %s", rt)
	s.note(msg)
	s.log.Error("ready timeout", "after", rt)
	s.mu.Lock()
	s.status.LastError = msg
	s.mu.Unlock()
	s.stopProcess()
	s.afterEnd(false, api.ResultTimeout)
}

// cannotProbe handles a probe the daemon could not make (see ownFailure):
// the server is not blamed, the probes go on at their interval, and the
// episode is logged once, not at every probe.
func (s *Supervisor) cannotProbe(err error) {
	if s.blind {
		return
	}
	s.blind = true
	s.log.Warn("cannot probe the server: ttisd is short of its own resources; not counted against the server", "err", err)
	s.note(fmt.Sprintf("Cannot probe /health: ttisd itself is short of resources (%v). Not counted against the server; probing goes on.", err))
}

// probedAgain ends an episode of cannotProbe once a probe reaches the
// server (whatever it answers).
func (s *Supervisor) probedAgain() {
	if !s.blind {
		return
	}
	s.blind = false
	s.sightedAt = s.deps.Clock.Now()
	s.log.Info("probing the server again")
	s.note("Probing /health again.")
}

// startDeferred handles a start the daemon could not make for want of its
// own resources (see ownFailure): it does not count against the start
// limit or the back-off, and is retried after the current restart delay.
// The episode is logged once.
func (s *Supervisor) startDeferred(err error) {
	s.starts = s.starts[:len(s.starts)-1]
	delay := s.backoff()
	msg := "cannot start the server: ttisd itself is short of resources: " + err.Error()
	if !s.startBlocked {
		s.startBlocked = true
		s.log.Warn("cannot start the server: ttisd is short of its own resources; retrying, not counted against the unit", "err", err)
		s.note(fmt.Sprintf("%s. Not counted against the unit; retrying every %s.", msg, delay))
	}
	s.mu.Lock()
	s.status.LastError = msg
	s.mu.Unlock()
	s.setState(api.StateActivating, api.SubAutoRestart, nil)
	s.restartTimer = s.deps.Clock.NewTimer(delay)
}

// checkedLive handles the health check of an active server: LiveFailures
// failures in a row stop it and apply the restart policy, as a missed
// watchdog does under systemd.
func (s *Supervisor) checkedLive(r probeResult) {
	err := r.err
	if err == nil {
		if s.liveFails > 0 {
			s.note("Health check passes again.")
		}
		s.liveFails = 0
		s.mu.Lock()
		changed := r.workers != s.status.Workers
		s.status.Workers = r.workers
		s.mu.Unlock()
		if changed && r.workers != "" {
			s.note("Workers: " + r.workers)
		}
		return
	}
	s.liveFails++
	s.log.Warn("health check failed", "failures", s.liveFails, "err", err)
	s.note(fmt.Sprintf("Health check failed (%d of %d): %v", s.liveFails, s.deps.LiveFailures, err))
	if s.liveFails < s.deps.LiveFailures {
		return
	}
	msg := fmt.Sprintf("server stopped answering /health (%d checks failed in a row: %v)", s.liveFails, err)
	s.mu.Lock()
	s.status.LastError = msg
	s.mu.Unlock()
	s.log.Error("server hung", "reason", msg)
	s.stopProcess()
	s.afterEnd(false, api.ResultWatchdog)
}

func (s *Supervisor) stopProbes() {
	if s.liveTicker != nil {
		s.liveTicker.Stop()
		s.liveTicker = nil
	}
	if s.readyTimer != nil {
		s.readyTimer.Stop()
		s.readyTimer = nil
	}
	if s.pollTicker != nil {
		s.pollTicker.Stop()
		s.pollTicker = nil
	}
}

// exited handles a process that ended without being asked to.
func (s *Supervisor) exited(ex Exit) {
	s.reap(ex)
	s.note("Main process exited, " + ex.String() + ".")
	result := api.ResultSuccess
	if !ex.Clean() {
		result = api.ResultExitCode
		if ex.Signal != 0 {
			result = api.ResultSignal
		}
		s.mu.Lock()
		s.status.LastError = "server " + ex.String() + lastStderr(s.ring)
		s.mu.Unlock()
		s.log.Warn("server exited", "exit", ex.String())
	} else {
		s.log.Info("server exited", "exit", ex.String())
	}
	s.afterEnd(ex.Clean(), result)
}

// lastStderr returns ": <last stderr line>" to explain an exit status.
func lastStderr(r *logring.Ring) string {
	lines := r.Tail(20)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Stream == "stderr" && lines[i].Text != "" {
			return ": " + lines[i].Text
		}
	}
	return ""
}

// reap clears the process after it exited and kills what is left of its
// process group (grandchildren that outlived it).
func (s *Supervisor) reap(ex Exit) {
	s.stopProbes()
	_ = s.proc.Signal(syscall.SIGKILL)
	if s.deps.Ended != nil {
		s.deps.Ended(s.proc.Pid())
	}
	for _, w := range s.outs {
		w.Flush()
	}
	s.proc, s.outs, s.exitC, s.probeC = nil, nil, nil, nil
	s.mu.Lock()
	s.status.PID = 0
	s.status.LastExit = ex.String()
	s.status.Adopted = false
	s.status.Workers = ""
	s.mu.Unlock()
}

// afterEnd applies the restart policy once a process is gone (or failed to
// start).
func (s *Supervisor) afterEnd(clean bool, result string) {
	policy := s.spec.Restart.Policy
	restart := s.want && (policy == units.RestartAlways || (policy == units.RestartOnFailure && !clean))
	if !restart {
		s.want = false
		if clean {
			s.setState(api.StateInactive, api.SubDead, func(st *Status) { st.Result = result })
		} else {
			s.setState(api.StateFailed, api.SubFailed, func(st *Status) { st.Result = result })
		}
		return
	}
	delay := s.backoff()
	s.failures++
	s.mu.Lock()
	s.status.Restarts++
	s.status.RestartsTotal++
	n := s.status.Restarts
	s.mu.Unlock()
	s.setState(api.StateActivating, api.SubAutoRestart, func(st *Status) { st.Result = result })
	s.note(fmt.Sprintf("Scheduled restart in %s, restart counter is at %d.", delay, n))
	s.restartTimer = s.deps.Clock.NewTimer(delay)
}

// backoff doubles the delay for every consecutive failure up to MaxDelay.
func (s *Supervisor) backoff() time.Duration {
	d, maxDelay := s.spec.Restart.Delay.Duration, s.spec.Restart.MaxDelay.Duration
	for i := 0; i < s.failures && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

// stopProcess sends SIGTERM to the process group, waits StopTimeout, then
// sends SIGKILL, and returns once the process has been reaped.
func (s *Supervisor) stopProcess() {
	if s.proc == nil {
		return
	}
	s.stopProbes()
	pid := s.proc.Pid()
	s.setState(api.StateDeactivating, api.SubStopSigterm, nil)
	s.note(fmt.Sprintf("Stopping server, pid %d.", pid))
	if err := s.proc.Signal(syscall.SIGTERM); err != nil {
		s.log.Warn("SIGTERM failed", "err", err)
	}
	// A stopped (SIGSTOP) process can only act on SIGTERM once continued;
	// systemd sends SIGCONT along for the same reason.
	_ = s.proc.Signal(syscall.SIGCONT)
	t := s.deps.Clock.NewTimer(s.spec.Restart.StopTimeout.Duration)
	var ex Exit
	select {
	case ex = <-s.exitC:
		t.Stop()
	case <-t.C():
		s.setState(api.StateDeactivating, api.SubStopSigkill, nil)
		s.note(fmt.Sprintf("Server did not stop within %s, sending SIGKILL.", s.spec.Restart.StopTimeout.Duration))
		s.log.Warn("stop timeout, killing", "pid", pid)
		_ = s.proc.Signal(syscall.SIGKILL)
		ex = <-s.exitC
	}
	s.reap(ex)
	s.note("Server stopped, " + ex.String() + ".")
}

func (s *Supervisor) setState(state, sub string, f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.State != state {
		s.status.Since = s.deps.Clock.Now()
	}
	s.status.State, s.status.SubState = state, sub
	if f != nil {
		f(&s.status)
	}
}

// note records a supervisor event in the unit's log ring.
func (s *Supervisor) note(text string) {
	s.ring.Add(api.LogLine{Time: s.deps.Clock.Now(), Stream: "ttisd", Text: text})
}

// probeResult is one health check's outcome.
type probeResult struct {
	err     error
	workers string
}

func (s *Supervisor) probe(ctx context.Context, listen string, timeout time.Duration, c chan<- probeResult) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.deps.Probe != nil {
		c <- probeResult{err: s.deps.Probe(pctx, listen)}
		return
	}
	a, err := health(pctx, listen)
	if err == nil && !a.Ready() {
		err = fmt.Errorf("health answered %s", statusLine(a.Status))
	}
	if err != nil {
		c <- probeResult{err: err}
		return
	}
	c <- probeResult{workers: a.Header.Get(runtime.HeaderWorkers)}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// probeClient does not keep connections: one probe per poll interval, and a
// kept connection would hold a server's drain open.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}

// HTTPProbe is the default readiness probe: GET http://listen/health must
// answer 200. A wildcard listen host is probed on loopback.
func HTTPProbe(ctx context.Context, listen string) error {
	a, err := health(ctx, listen)
	if err != nil {
		return err
	}
	if !a.Ready() {
		return fmt.Errorf("health answered %s", statusLine(a.Status))
	}
	return nil
}

// Identify asks the server at listen which process it is and which unit
// text it runs (the runtime.HeaderPID and runtime.HeaderUnitHash headers of
// /health), and whether it is ready (200) or still loading (503).
func Identify(ctx context.Context, listen string) (pid int, unitHash string, ready bool, err error) {
	a, err := health(ctx, listen)
	if err != nil {
		return 0, "", false, err
	}
	pid, _ = strconv.Atoi(a.Header.Get(runtime.HeaderPID))
	switch {
	case a.Ready():
		ready = true
	case a.Status == http.StatusServiceUnavailable && pid > 0:
	default:
		return 0, "", false, fmt.Errorf("health answered %s", statusLine(a.Status))
	}
	return pid, a.Header.Get(runtime.HeaderUnitHash), ready, nil
}

func health(ctx context.Context, listen string) (runtime.HealthAnswer, error) {
	base, err := units.BaseURL(listen)
	if err != nil {
		return runtime.HealthAnswer{}, err
	}
	return runtime.ProbeHealth(ctx, probeClient, base, nil)
}

// statusLine is an HTTP status as net/http writes it ("503 Service
// Unavailable").
func statusLine(code int) string { return fmt.Sprintf("%d %s", code, http.StatusText(code)) }
