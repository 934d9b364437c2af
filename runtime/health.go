package runtime

import (
	"context"
	"io"
	"net/http"
)

// Headers of a unit server's GET /health answer, read by the daemon
// (daemon/internal/supervise) to identify and describe the process. They
// live in this contract, not in runtime/serve, so that the supervisor can
// read them without linking the front door.
const (
	// HeaderUnitHash identifies the unit text the server runs (hex
	// SHA-256), so a restarted ttisd can tell which version a server it
	// adopts runs.
	HeaderUnitHash = "Ttis-Unit-Hash"
	// HeaderPID is the server's process id.
	HeaderPID = "Ttis-Pid"
	// HeaderWorkers sums up an upstream media server's device workers
	// (serve.WorkerReporter), for the daemon's status.
	HeaderWorkers = "Ttis-Workers"
)

// HealthAnswer is what one GET /health answered.
type HealthAnswer struct {
	// Status is the HTTP status (200 ready; a ttis server answers 503
	// while its model loads).
	Status int
	// Header holds the answer's headers (HeaderPID, HeaderUnitHash,
	// HeaderWorkers on a ttis server).
	Header http.Header
	// Body is the start of the answer's body (an error message), at most
	// maxHealthBody bytes.
	Body []byte
}

// Ready reports whether the server answered 200.
func (a HealthAnswer) Ready() bool { return a.Status == http.StatusOK }

// maxHealthBody bounds how much of a /health body is read: enough for an
// error message; a server that sends more is not waited on.
const maxHealthBody = 4 << 10

// ProbeHealth asks GET base/health once with client, sending header (the
// caller's credentials; nil: none), and returns the answer. Every prober
// uses it: the daemon probing its servers (daemon/internal/supervise), a
// vllm unit's server waiting for its upstream (runtime/vllm), and a client
// waiting for a server to come up (runtime/openai's Health). An error is
// an answer that did not come: nothing listening, a timeout, a connection
// cut; each caller decides what that means for it.
func ProbeHealth(ctx context.Context, client *http.Client, base string, header http.Header) (HealthAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return HealthAnswer{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return HealthAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	if err != nil {
		return HealthAnswer{}, err
	}
	return HealthAnswer{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}
