// Package serve is a unit's OpenAI-compatible inference front door: the
// fasthttp server behind `ttisd serve`. It owns HTTP, auth, admission
// before work (admit.go: a reading budget in bytes, prompts judged by their
// length, max_concurrency slots and a bounded wait queue), request
// validation, stop strings, n>1 fan-out, SSE framing and vLLM-named
// Prometheus metrics, and drives a runtime.Engine for tokens.
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
// chunks, one write per batch of pending tokens; the connection then serves
// the client's next request (keep-alive) unless the client asked to close
// it or spoke HTTP/1.0. A unit whose runtime is an upstream server (vllm) is
// served in upstream mode: auth, slots, the queue, the request log and
// latency metrics stay here and the request is forwarded (see Upstream).
package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
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

// WorkerReporter is an Upstream that knows its device workers (a
// tt-media-server restarts them inside its process): Workers is one line
// such as "4 workers: 4 alive, 4 ready, 1 restarts, 2 errors", or "".
type WorkerReporter interface {
	Workers() string
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

// Server is one unit's inference server. Create it with New, hand it an
// engine with SetEngine (health turns 200), serve with Serve and stop with
// Shutdown; Run does all of that.
type Server struct {
	cfg      Config
	log      *slog.Logger
	state    atomic.Pointer[engineState]
	live     atomic.Pointer[Live]
	upstream atomic.Pointer[upstreamState]
	media    atomic.Pointer[mediaState]
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

type engineState struct {
	eng        runtime.Engine
	info       runtime.Info
	tok        runtime.Tokenizer
	names      map[string]bool
	maxContext int
	eos        map[int]bool
	grammars   *grammarCache
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

// SetEngine makes the server ready: /health answers 200 from now on.
func (s *Server) SetEngine(e runtime.Engine) {
	info := e.Info()
	st := &engineState{eng: e, info: info, tok: e.Tokenizer(), names: map[string]bool{s.cfg.Model: true, info.Model: true}, eos: map[int]bool{}}
	st.grammars = newGrammarCache(st.tok)
	for _, a := range s.cfg.Aliases {
		st.names[a] = true
	}
	st.maxContext = info.MaxContext
	if s.cfg.MaxContext > 0 && (st.maxContext <= 0 || s.cfg.MaxContext < st.maxContext) {
		st.maxContext = s.cfg.MaxContext
	}
	for _, id := range st.tok.EOS() {
		st.eos[id] = true
	}
	s.state.Store(st)
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

// Ready reports whether an engine or an upstream is set.
func (s *Server) Ready() bool {
	return s.state.Load() != nil || s.upstream.Load() != nil || s.media.Load() != nil
}

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
// the engine in the background, and serves until ctx ends; then it drains
// (see Shutdown) and closes the engine. A failed engine open ends Run with
// the error.
func Run(ctx context.Context, cfg Config, open func(context.Context) (runtime.Engine, error)) error {
	return runBackend(ctx, cfg, func(c context.Context) (backend, error) {
		e, err := open(c)
		if err != nil {
			return nil, err
		}
		return engineBackend{e}, nil
	})
}

// RunUpstream is Run for a unit whose requests go to an upstream server
// (the vllm runtime): it ends with an error when the upstream dies, so the
// supervisor restarts the unit.
func RunUpstream(ctx context.Context, cfg Config, open func(context.Context) (Upstream, error)) error {
	return runBackend(ctx, cfg, func(c context.Context) (backend, error) {
		u, err := open(c)
		if err != nil {
			return nil, err
		}
		return upstreamBackend{u}, nil
	})
}

func runBackend(ctx context.Context, cfg Config, open func(context.Context) (backend, error)) error {
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

// backend is what a unit's requests are served from: an engine, or an
// upstream server they are forwarded to.
type backend interface {
	// install makes the server ready with this backend.
	install(s *Server)
	// dead is closed when the backend dies on its own (nil: never).
	dead() <-chan struct{}
	deathErr() error
	Close() error
}

type engineBackend struct{ runtime.Engine }

func (b engineBackend) install(s *Server) {
	s.SetEngine(b.Engine)
	i := b.Info()
	s.log.Info("ready", "model", i.Model, "runtime", i.Runtime, "simulated", i.Simulated)
}
func (engineBackend) dead() <-chan struct{} { return nil }
func (engineBackend) deathErr() error       { return nil }

type upstreamBackend struct{ Upstream }

func (b upstreamBackend) install(s *Server) {
	s.SetUpstream(b.Upstream)
	s.log.Info("ready", "model", b.Model(), "runtime", "upstream")
}
func (b upstreamBackend) dead() <-chan struct{} { return b.Done() }
func (b upstreamBackend) deathErr() error       { return b.Err() }

func (s *Server) run(ctx context.Context, ln net.Listener, open func(context.Context) (backend, error)) error {
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()
	if s.cfg.Reload != nil {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.reloads(rctx)
	}
	s.log.Info("listening", "addr", ln.Addr().String(), "model", s.cfg.Model)

	type opened struct {
		b   backend
		err error
	}
	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	openDone := make(chan opened, 1)
	go func() {
		b, err := open(openCtx)
		openDone <- opened{b, err}
	}()

	var be backend
	var runErr error
	// openReceived is true once openDone was received from: a failed open must
	// not then wait the shutdown grace for a second value that never comes.
	// served is true once serveErr was.
	openReceived, served := false, false
	select {
	case o := <-openDone:
		openReceived = true
		if o.err != nil {
			runErr = fmt.Errorf("open runtime: %w", o.err)
			s.SetLoadError(runErr)
			break
		}
		be = o.b
		be.install(s)
		select {
		case <-ctx.Done():
		case err := <-serveErr:
			served = true
			runErr = fmt.Errorf("serve: %w", err)
		case <-be.dead():
			runErr = fmt.Errorf("runtime exited: %v", be.deathErr())
			s.log.Error("runtime exited", "err", be.deathErr())
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
	if be == nil && !openReceived {
		// The open may still be running; wait for it so what it opened is
		// closed rather than leaked.
		select {
		case o := <-openDone:
			be = o.b
		case <-time.After(s.live.Load().ShutdownGrace):
		}
	}
	if be != nil {
		if err := be.Close(); err != nil {
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

// keepConn runs after a streamed response, with conn the connection the
// request came on and hc fasthttp's hijacked view of it. A clean stream
// with keep-alive goes on serving the client's next requests on conn (see
// serveKept); anything else closes it.
//
// Requests the client pipelined behind the stream sit in fasthttp's read
// buffer, which only hc reads: they are taken from it and replayed ahead
// of the socket. The next stream on the connection starts again from the
// socket itself, so wrappers never nest.
func (s *Server) keepConn(conn, hc net.Conn, keep bool) {
	raw := conn
	if p, ok := conn.(*replayConn); ok {
		raw = p.Conn
	}
	var ahead []byte
	var err error
	if keep {
		ahead, err = takeBuffered(raw, hc)
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if !keep || err != nil || s.draining.Load() {
		_ = raw.Close()
		return
	}
	if s.kept == nil {
		s.kept = map[*replayConn]struct{}{}
	}
	// Always a new wrapper: fasthttp tracks connections by value, and the
	// request's own serving loop is still to forget raw when this one
	// starts.
	next := &replayConn{Conn: raw, ahead: ahead}
	next.used.Store(len(ahead) > 0)
	s.kept[next] = struct{}{}
	// A goroutine of its own, so that fasthttp releases the finished
	// request's context now rather than when the connection ends.
	go s.serveKept(next)
}

// serveKept waits, up to IdleTimeout, for the first byte of the client's
// next request on a kept connection, then hands the connection back to
// fasthttp. The wait is ours because fasthttp serves a handed-back
// connection as a new one: it would bound the wait by ReadTimeout and
// never count the connection as idle, so its shutdown would wait on it.
func (s *Server) serveKept(c *replayConn) {
	defer func() {
		s.keptMu.Lock()
		delete(s.kept, c)
		s.keptMu.Unlock()
	}()
	if !c.used.Load() {
		var first [1]byte
		err := c.Conn.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if err == nil {
			var n int
			n, err = c.Conn.Read(first[:])
			if n == 1 {
				err = errors.Join(err, c.Conn.SetReadDeadline(time.Time{}))
			}
		}
		if err != nil {
			_ = c.Conn.Close()
			return
		}
		c.ahead = append(c.ahead, first[0])
		c.used.Store(true)
	}
	_ = s.srv.ServeConn(c)
}

// closeKept closes the kept connections: with idleOnly, those still
// waiting for a request to begin.
func (s *Server) closeKept(idleOnly bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for c := range s.kept {
		if !idleOnly || !c.used.Load() {
			_ = c.Conn.Close()
		}
	}
}

// aLongTimeAgo is a read deadline that has passed: reads fail at once
// with os.ErrDeadlineExceeded instead of waiting for the socket.
var aLongTimeAgo = time.Unix(1, 0)

// takeBuffered returns what reading hc yields without waiting on raw, its
// socket: bytes fasthttp had read ahead (and, for a replayConn, the rest
// of its replay).
func takeBuffered(raw, hc net.Conn) ([]byte, error) {
	if err := raw.SetReadDeadline(aLongTimeAgo); err != nil {
		return nil, err
	}
	var ahead []byte
	var buf [512]byte
	for range 1 << 16 { // bounded: fasthttp's buffer and a replay are finite
		n, err := hc.Read(buf[:])
		ahead = append(ahead, buf[:n]...)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ahead, raw.SetReadDeadline(time.Time{})
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, errors.New("read-ahead buffer does not end")
}

// replayConn is a connection whose first reads return ahead; keepConn
// hands connections back to fasthttp in one. used records that a request
// has begun to arrive on it.
type replayConn struct {
	net.Conn
	ahead []byte
	used  atomic.Bool
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

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
