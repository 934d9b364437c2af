package vllm

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/runtime/host"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Defaults for waiting on and talking to the upstream server.
const (
	// DefaultStallTimeout allows a first run to build the tt-metal tensor
	// cache, which prints progress but can take many minutes.
	DefaultStallTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds silence inside one upstream response.
	DefaultIdleTimeout = 5 * time.Minute
	healthPoll         = time.Second
	// workersPoll is how often a media server's /tt-liveness is read.
	workersPoll = 5 * time.Second
	stopTimeout = 30 * time.Second
)

// Server is a unit's running upstream vLLM server and the proxy to it.
type Server struct {
	*Proxy
	up      *Upstream
	launch  *Launch
	secrets *startSecrets
	// workers watches a media server's worker restarts; nil for vLLM.
	workers *workerWatch
}

// Open plans and starts u's upstream server and waits until its /health
// answers 200, the process exits, it stalls, or ctx ends.
func Open(ctx context.Context, u *units.Unit, log *slog.Logger) (*Server, error) {
	spec, err := catalog.LookupIn(u.Catalog, u.Model, u.Device)
	if err != nil {
		return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
	}
	if err := checkHost(ctx, u, spec, log); err != nil {
		return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
	}
	port := u.Vllm.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
		}
	}
	// tt-media-server always checks a key (media.go): a fresh one per start,
	// known only to the container (through the env file) and the proxy.
	var mediaKey string
	var extra map[string]string
	if spec.IsMedia() {
		mediaKey = "ttis-" + rand.Text()
		extra = mediaKeys(spec, mediaKey)
	}
	secrets, err := readSecrets(u, RuntimeDir(), extra)
	if err != nil {
		return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
	}
	l, err := PlanWith(u, spec, port, PlanOptions{EnvFile: secrets.envFile, Secrets: secrets.env})
	if err != nil {
		secrets.remove()
		return nil, err
	}
	log = log.With("upstream", l.Argv[0])
	// Secrets travel in the env file; a secret-looking [vllm] env value is
	// still kept out of the log.
	log.Info("starting upstream server", "argv", container.Redact(l.Argv), "addr", l.Addr)
	up, err := Start(l, log)
	if err != nil {
		secrets.remove()
		return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
	}
	stall := u.Vllm.StallTimeout.Duration
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	if err := up.WaitReady(ctx, stall, healthPoll); err != nil {
		up.Stop(stopTimeout)
		secrets.remove()
		return nil, fmt.Errorf("open vllm runtime for unit %s: %w", u.Name, err)
	}
	log.Info("upstream server ready", "pid", up.Pid())
	p := NewProxy(l.Addr, DefaultIdleTimeout)
	srv := &Server{Proxy: p, up: up, launch: l, secrets: secrets}
	if mediaKey != "" {
		p.Authorization = "Bearer " + mediaKey
		srv.workers = &workerWatch{}
		go srv.workers.run(l.Addr, workersPoll, up.Done())
	}
	return srv, nil
}

// checkHost runs the host readiness checks before a start: a failed check
// blocks it unless the unit says [vllm] host_checks = "warn".
func checkHost(ctx context.Context, u *units.Unit, spec *catalog.Spec, log *slog.Logger) error {
	need := host.NeedOf(u)
	need.Spec = spec
	r := host.Run(ctx, host.Env{}, need)
	for _, c := range r.Checks {
		if c.Status == host.Warn {
			log.Warn("host check", "check", c.Name, "detail", c.Detail, "fix", c.Fix)
		}
	}
	if r.Ready {
		return nil
	}
	if host.Enforced(u) {
		return fmt.Errorf("%s (ttisctl doctor %s shows every check; [vllm] host_checks = \"warn\" starts anyway)", r.Summary(), u.Name)
	}
	log.Warn("starting on a host that is not ready ([vllm] host_checks = \"warn\")", "checks", r.Summary())
	return nil
}

// Info describes the served model (runtime.Backend): the name the
// upstream serves it under. The front door forwards to the upstream
// (Forward, from the Proxy) and ends when it does (Done, Err).
func (s *Server) Info() runtime.Info { return runtime.Info{Model: s.launch.Model, Runtime: "vllm"} }

// Addr is the upstream's loopback address.
func (s *Server) Addr() string { return s.launch.Addr }

// Done is closed when the upstream process exits; Err says how.
func (s *Server) Done() <-chan struct{} { return s.up.Done() }

// Err describes the upstream's exit once Done is closed.
func (s *Server) Err() error { return s.up.Err() }

// Close stops the upstream process group (SIGTERM, then SIGKILL).
func (s *Server) Close() error {
	s.up.Stop(stopTimeout)
	s.secrets.remove()
	return nil
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the upstream binds; the upstream then fails to start
// and the supervisor restarts the unit.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
