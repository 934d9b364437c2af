package runtime

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
