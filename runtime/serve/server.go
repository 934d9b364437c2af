// Package serve is a unit's OpenAI-compatible inference front door: the
// fasthttp server behind `ttisd serve`. It owns HTTP, auth, admission
// before work (admit.go: a reading budget in bytes, prompts judged by their
// length, max_concurrency slots and a bounded wait queue), request
// validation, stop strings, n>1 fan-out, SSE framing and vLLM-named
// Prometheus metrics, and serves them from the unit's backend: a
// runtime.Backend, asked once what it can do (backend.go) and served
// through one route table (routes.go).
//
// Endpoints: POST /v1/completions, POST /v1/chat/completions, GET /v1/models,
// POST /tokenize, POST /detokenize, GET /tokenizer_info, GET /health,
// GET /version, GET /metrics, and with Config.LegacyRoute the older
// inference API (legacy.go). /health, /version and /metrics need no auth.
// Generation requests may constrain their output (structured.go) and call
// tools (tools.go). Media units (images, speech, CNNs, embeddings, video)
// serve tt-media-server's API instead (media.go).
//
// Streaming responses are written straight to the connection as HTTP/1.1
// chunks, one write per batch of pending tokens (sse.go); the connection
// then serves the client's next request (keep-alive) unless the client
// asked to close it or spoke HTTP/1.0. A unit whose backend is a Forwarder
// (the vllm runtime's upstream server) has its requests forwarded: auth,
// slots, the queue, the request log and latency metrics stay here
// (forward.go), and routes the front door does not know are passed
// through (passthrough.go).
package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sync/semaphore"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
)

// Config is one unit's server configuration.
type Config struct {
	// Listen is the host:port to bind.
	Listen string
	// Model is the unit's model name; clients may also use the engine's
	// Info().Model and any of Aliases in the "model" field.
	Model   string
	Aliases []string
	// Auth checks /v1/*, /tokenize and /detokenize; nil means none.
	Auth auth.Verifier
	// MaxConcurrency is the number of sequence slots (required).
	MaxConcurrency int
	// MaxQueue is how many sequences may wait for a slot; beyond it
	// requests get 429. 0 means none may wait.
	MaxQueue int
	// MaxContext caps prompt plus output tokens; 0 uses the engine's.
	MaxContext int
	// RequestTimeout bounds a request from arrival to its last token; 0 is
	// no limit.
	RequestTimeout time.Duration
	// MaxBodyBytes limits request bodies (default 4 MiB).
	MaxBodyBytes int
	// MaxInflightBytes bounds the bytes of request bodies being decoded
	// and tokenized at once (admit.go); at least MaxBodyBytes (default
	// twice it).
	MaxInflightBytes int64
	// ReadTimeout bounds reading a request (default 30s); WriteTimeout
	// bounds each write to a client (default 30s); IdleTimeout bounds
	// keep-alive idleness (default 120s).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownGrace is how long in-flight requests may run after a stop
	// before they are cancelled (default 30s).
	ShutdownGrace time.Duration
	// Heartbeat is the SSE comment interval while a stream waits for a
	// slot or a token (default 5s); a failed heartbeat cancels the request.
	Heartbeat time.Duration
	// Version is ttis's version, shown by GET /version.
	Version string
	// Conditions are shown by GET /version (nil: none).
	Conditions *Conditions
	// LegacyRoute, when not empty, serves the older Tenstorrent inference
	// API at this path (legacy.go).
	LegacyRoute string
	// Logger receives one debug line per request and errors; nil discards.
	Logger *slog.Logger
	// UnitHash identifies the unit text the server runs (hex SHA-256);
	// /health reports it in runtime.HeaderUnitHash with the pid in
	// runtime.HeaderPID, so a restarted ttisd can tell which version a
	// server it adopts runs.
	UnitHash string
	// Reload delivers new live settings while the server runs (see Live).
	Reload <-chan Live
	// MediaLimits bound a media unit's uploads (media.go).
	MediaLimits MediaLimits
}

// Live is the part of a unit's configuration that a running server takes
// without a restart: it is read per request, not built into the engine,
// the listener or the HTTP server. ttisd sends SIGHUP only for edits that
// change nothing else.
type Live struct {
	MaxQueue       int
	RequestTimeout time.Duration
	ShutdownGrace  time.Duration
	UnitHash       string
}

func (c Config) live() Live {
	return Live{MaxQueue: c.MaxQueue, RequestTimeout: c.RequestTimeout, ShutdownGrace: c.ShutdownGrace, UnitHash: c.UnitHash}
}

// Server is one unit's inference server. Create it with New, hand it a
// backend with SetBackend (health turns 200), serve with Serve and stop
// with Shutdown; Run does all of that.
type Server struct {
	cfg  Config
	log  *slog.Logger
	be   atomic.Pointer[backendState]
	live atomic.Pointer[Live]
	// videoJobs are the video generation jobs (media_video.go).
	videoJobs videoJobs
	// loadErr is set when the engine failed to open.
	loadErr atomic.Pointer[string]
	// sem holds the sequence slots; reading the reading budget in bytes
	// (admit.go).
	sem     *semaphore.Weighted
	reading *semaphore.Weighted
	// readSinceFree counts the bytes read since memory was last handed
	// back; freeing is set while a hand-back is scheduled (admit.go).
	readSinceFree atomic.Int64
	freeing       atomic.Bool
	m             *metrics
	srv           *fasthttp.Server

	// genCtx parents every generation; cancelling it aborts them all (the
	// end of the shutdown grace period).
	genCtx    context.Context
	cancelGen context.CancelFunc
	draining  atomic.Bool
	// kept holds the connections keepConn serves (see closeKept).
	keptMu  sync.Mutex
	kept    map[*replayConn]struct{}
	started time.Time
	// sinks recycles SSE writers and their buffers across streams.
	sinks sync.Pool
}

// New validates cfg and builds a server with no engine yet.
func New(cfg Config) (*Server, error) {
	if cfg.MaxConcurrency <= 0 {
		return nil, fmt.Errorf("serve: max_concurrency must be positive, got %d", cfg.MaxConcurrency)
	}
	if cfg.MaxQueue < 0 {
		return nil, fmt.Errorf("serve: max_queue must not be negative, got %d", cfg.MaxQueue)
	}
	if cfg.Model == "" {
		return nil, errors.New("serve: model name is empty")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.MaxInflightBytes == 0 {
		cfg.MaxInflightBytes = 2 * int64(cfg.MaxBodyBytes)
	}
	if cfg.MaxInflightBytes < int64(cfg.MaxBodyBytes) {
		return nil, fmt.Errorf("serve: max_inflight_bytes %d is less than max_body_bytes %d: a request of the largest size could never be read", cfg.MaxInflightBytes, cfg.MaxBodyBytes)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReadTimeout, 30*time.Second)
	def(&cfg.WriteTimeout, 30*time.Second)
	def(&cfg.IdleTimeout, 120*time.Second)
	def(&cfg.ShutdownGrace, 30*time.Second)
	def(&cfg.Heartbeat, 5*time.Second)
	if cfg.Auth == nil {
		v, _ := auth.New(auth.ModeNone, "", auth.Policy{})
		cfg.Auth = v
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, sem: semaphore.NewWeighted(int64(cfg.MaxConcurrency)), reading: semaphore.NewWeighted(cfg.MaxInflightBytes),
		m: newMetrics(cfg.Model), started: time.Now()}
	lv := cfg.live()
	s.live.Store(&lv)
	s.genCtx, s.cancelGen = context.WithCancel(context.Background())
	s.sinks.New = func() any { return &sseSink{buf: make([]byte, 0, 4096), frame: make([]byte, 0, 4096)} }
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  "ttis",
		ReadTimeout:           cfg.ReadTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		MaxRequestBodySize:    cfg.MaxBodyBytes,
		NoDefaultServerHeader: false,
		CloseOnShutdown:       true,
		// Streams hijack their connection and hand it back (keepConn).
		KeepHijackedConns: true,
		// Flush every response at once: fasthttp otherwise holds a
		// response back while the client has pipelined more requests,
		// and a stream written straight to the connection behind it
		// would overtake it.
		ReduceMemoryUsage: true,
		Logger:            fasthttpLogger{log},
		ErrorHandler:      s.transportError,
	}
	return s, nil
}

// SetLive applies new live settings; requests that arrive from now on see
// them. A negative queue is refused (the old settings stay).
func (s *Server) SetLive(l Live) error {
	if l.MaxQueue < 0 {
		return fmt.Errorf("serve: max_queue must not be negative, got %d", l.MaxQueue)
	}
	if l.ShutdownGrace <= 0 {
		l.ShutdownGrace = s.live.Load().ShutdownGrace
	}
	old := s.live.Swap(&l)
	s.log.Info("live settings applied", "max_queue", l.MaxQueue, "request_timeout", l.RequestTimeout,
		"shutdown_grace", l.ShutdownGrace, "unit_hash", l.UnitHash, "was_max_queue", old.MaxQueue, "was_request_timeout", old.RequestTimeout)
	return nil
}

// SetLoadError records why the engine could not be opened; /health answers
// 503 with the message.
func (s *Server) SetLoadError(err error) {
	msg := err.Error()
	s.loadErr.Store(&msg)
}

// Ready reports whether a backend is set.
func (s *Server) Ready() bool { return s.be.Load() != nil }

// Handler is the server's request handler (for in-process tests and
// benchmarks that serve it on their own listener).
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting, lets in-flight requests run for the grace
// period, then cancels the rest and waits (bounded) for them to end. It does
// not close the engine.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.closeKept(true)
	graceFor := s.live.Load().ShutdownGrace
	grace, cancel := context.WithTimeout(ctx, graceFor)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// The server's own wait is bounded by the grace period plus a
		// margin for cancelled streams to write their last event.
		c, cc := context.WithTimeout(context.WithoutCancel(ctx), graceFor+5*time.Second)
		defer cc()
		done <- s.srv.ShutdownWithContext(c)
	}()
	defer s.closeKept(false)
	select {
	case err := <-done:
		s.cancelGen()
		return err
	case <-grace.Done():
		s.log.Warn("shutdown grace period over; cancelling in-flight requests", "grace", graceFor)
		s.cancelGen()
	}
	return <-done
}

// Run serves cfg.Listen: it starts listening at once (health 503), opens
// the backend in the background, and serves until ctx ends; then it drains
// (see Shutdown) and closes the backend. A failed open ends Run with the
// error, and so does a backend that ends on its own (a runtime.Exiter: an
// upstream server), so that the supervisor restarts the unit.
func Run(ctx context.Context, cfg Config, open func(context.Context) (runtime.Backend, error)) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	return s.run(ctx, ln, open)
}

func (s *Server) run(ctx context.Context, ln net.Listener, open func(context.Context) (runtime.Backend, error)) error {
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()
	if s.cfg.Reload != nil {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.reloads(rctx)
	}
	s.log.Info("listening", "addr", ln.Addr().String(), "model", s.cfg.Model)

	type opened struct {
		b   runtime.Backend
		err error
	}
	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	openDone := make(chan opened, 1)
	go func() {
		b, err := open(openCtx)
		openDone <- opened{b, err}
	}()

	var b runtime.Backend
	var runErr error
	// openReceived is true once openDone was received from: a failed open must
	// not then wait the shutdown grace for a second value that never comes.
	// served is true once serveErr was.
	openReceived, served := false, false
	select {
	case o := <-openDone:
		openReceived = true
		b = o.b
		if o.err == nil && b == nil {
			o.err = errors.New("the runtime opened no backend")
		}
		if o.err == nil {
			o.err = s.SetBackend(b)
		}
		if o.err != nil {
			runErr = fmt.Errorf("open runtime: %w", o.err)
			s.SetLoadError(runErr)
			break
		}
		be := s.be.Load()
		be.logReady(s)
		select {
		case <-ctx.Done():
		case err := <-serveErr:
			served = true
			runErr = fmt.Errorf("serve: %w", err)
		case <-be.ended():
			runErr = fmt.Errorf("runtime exited: %v", be.exit.Err())
			s.log.Error("runtime exited", "err", be.exit.Err())
		}
	case <-ctx.Done():
		cancelOpen()
	case err := <-serveErr:
		served = true
		runErr = fmt.Errorf("serve: %w", err)
	}
	s.log.Info("stopping", "grace", s.live.Load().ShutdownGrace)
	if err := s.Shutdown(context.Background()); err != nil && runErr == nil {
		s.log.Warn("shutdown did not finish cleanly", "err", err)
	}
	// fasthttp's Shutdown closes only the listeners Serve has taken: one
	// that ran before the Serve goroutine did (a context already done, an
	// open that failed at once) left ln open and Serve accepting for
	// ever. Close it here too, and wait for Serve to return.
	_ = ln.Close()
	if !served {
		<-serveErr
	}
	if !openReceived {
		// The open may still be running; wait for it so what it opened is
		// closed rather than leaked.
		select {
		case o := <-openDone:
			b = o.b
		case <-time.After(s.live.Load().ShutdownGrace):
		}
	}
	if b != nil {
		if err := b.Close(); err != nil {
			s.log.Warn("closing runtime", "err", err)
		}
	}
	s.log.Info("stopped")
	return runErr
}

// reloads applies live settings from cfg.Reload until ctx ends.
func (s *Server) reloads(ctx context.Context) {
	for {
		select {
		case l, ok := <-s.cfg.Reload:
			if !ok {
				return
			}
			if err := s.SetLive(l); err != nil {
				s.log.Error("live settings refused", "err", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// newID returns a random identifier for responses and requests.
func newID() string { return rand.Text() }

type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "source", "fasthttp")
}

// transportError answers errors fasthttp raises before the handler runs
// (oversized or malformed requests, read timeouts) in OpenAI's shape.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	var e *apiError
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = &apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Message: fmt.Sprintf("request body exceeds the unit's limit of %d bytes (limits.max_body_bytes)", s.cfg.MaxBodyBytes)}
	case isTimeout(err):
		e = &apiError{Status: fasthttp.StatusRequestTimeout, Type: "TimeoutError", Message: "timed out reading the request"}
	default:
		e = badRequest("", "malformed HTTP request: %v", err)
	}
	writeError(ctx, e)
	ctx.SetConnectionClose()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
