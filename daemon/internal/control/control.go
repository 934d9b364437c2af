// Package control serves ttisd's control API: HTTP/1.1 and JSON under /v1
// on a unix socket (see package daemon/api for the types).
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/reconcile"
)

// Backend is what the API exposes; the daemon implements it over the
// reconciler.
type Backend interface {
	Info() api.Info
	List() api.UnitList
	Unit(name string, logLines int) (api.UnitDetail, error)
	Start(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error
	Restart(ctx context.Context, name string) error
	Reload(ctx context.Context) (api.ReloadResult, error)
	Ring(name string) (*logring.Ring, error)
	Devices() api.Devices
}

// Server handles control API requests.
type Server struct {
	Backend Backend
	Logger  *slog.Logger
	// Done ends streaming responses (logs -f) when the daemon shuts down.
	Done <-chan struct{}
	// Observe, when set, is told about every request: its route pattern
	// ("GET /v1/units/{name}"), status and duration. A request refused by
	// a limit is observed as "over control.max_followers" (or the limit's
	// key).
	Observe func(route string, code int, d time.Duration)
	// Limits cap the requests of each kind in progress; the zero value
	// caps nothing. (Limits.Connections is the Listener's.)
	Limits Limits

	// stop is cancelled when Done closes; log streams watch it.
	stop context.Context
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Backend.Info()) })
	mux.HandleFunc("GET /v1/units", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Backend.List()) })
	mux.HandleFunc("GET /v1/units/{name}", s.unit)
	mux.HandleFunc("POST /v1/units/{name}/start", s.action("start", s.Backend.Start))
	mux.HandleFunc("POST /v1/units/{name}/stop", s.action("stop", s.Backend.Stop))
	mux.HandleFunc("POST /v1/units/{name}/restart", s.action("restart", s.Backend.Restart))
	mux.HandleFunc("GET /v1/units/{name}/logs", s.logs)
	mux.HandleFunc("POST /v1/reload", s.reload)
	mux.HandleFunc("GET /v1/devices", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Backend.Devices()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, api.CodeNoEndpoint, fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path))
	})
	var gates [kinds]*gate
	for k := range kinds {
		gates[k] = &gate{kind: k, max: int64(s.Limits.of(k))}
	}
	s.stop = context.Background()
	if s.Done != nil {
		stop, cancel := context.WithCancel(context.Background())
		go func() {
			<-s.Done
			cancel()
		}()
		s.stop = stop
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderAPI, api.Version)
		// A browser page must never drive the daemon (if the socket is ever
		// exposed through a proxy): refuse requests that carry an origin.
		if r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" {
			writeError(w, http.StatusForbidden, api.CodeBadRequest, "browser requests are not accepted")
			return
		}
		// Admission before work: each kind has its own limit, and a full
		// one answers at once rather than queueing, so no kind waits for
		// another. The connection closes with the answer: a refused client
		// holds no descriptor of the daemon's.
		g := gates[kindOf(r)]
		if !g.enter() {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, api.CodeBusy, g.refusal())
			if s.Observe != nil {
				s.Observe("over control."+kindNames[g.kind].key, http.StatusServiceUnavailable, 0)
			}
			return
		}
		sl := &slot{g: g}
		defer sl.release()
		if g.kind == KindFollow {
			// The stream outlives this handler (see follow) and takes
			// the slot along.
			r = r.WithContext(context.WithValue(r.Context(), slotKey{}, sl))
		}
		if s.Observe == nil {
			mux.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(sw, r)
		// The mux sets r.Pattern to the route it chose.
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		s.Observe(route, sw.code, time.Since(start))
	})
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection: log streams
// (logs -f) flush and set write deadlines through it.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) unit(w http.ResponseWriter, r *http.Request) {
	lines, err := intParam(r, "lines", 10)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	d, err := s.Backend.Unit(r.PathValue("name"), lines)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) action(verb string, f func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if s.Logger != nil {
			s.Logger.Info("control request", append([]any{"action", verb, "unit", name}, peerAttrs(r.Context())...)...)
		}
		if err := f(r.Context(), name); err != nil {
			s.fail(w, err)
			return
		}
		d, err := s.Backend.Unit(name, 0)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
	}
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if s.Logger != nil {
		s.Logger.Info("control request", append([]any{"action", "reload"}, peerAttrs(r.Context())...)...)
	}
	res, err := s.Backend.Reload(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// logs writes the unit's recent lines as JSON lines (application/x-ndjson)
// and, with follow=true, keeps streaming new lines until the client goes
// away or the daemon stops.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	lines, err := intParam(r, "lines", 100)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	follow := r.URL.Query().Get("follow")
	if follow != "" && follow != "true" && follow != "false" {
		writeError(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("follow: %q is not true or false", follow))
		return
	}
	ring, err := s.Backend.Ring(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	if follow == "true" {
		s.follow(w, r, ring, lines)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, l := range ring.Tail(lines) {
		_ = enc.Encode(l)
	}
}

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a non-negative number", name, v)
	}
	return n, nil
}

// fail maps the backend's typed errors to HTTP statuses, in one place.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, reconcile.ErrNoUnit):
		writeError(w, http.StatusNotFound, api.CodeNotFound, err.Error())
	case errors.Is(err, reconcile.ErrNotRunnable):
		writeError(w, http.StatusConflict, api.CodeConflict, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, err.Error())
	default:
		if s.Logger != nil {
			s.Logger.Error("control request failed", "err", err)
		}
		writeError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.ErrorBody{Error: api.ErrorDetail{Code: code, Message: msg}})
}

// NewHTTPServer returns an http.Server for h with timeouts that suit a
// local API whose log stream may stay open for hours. Serve it on a
// Listener (NewListener) to cap its connections.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, ConnContext: peerContext}
}
