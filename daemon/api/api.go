// Package api defines the JSON types and paths of ttisd's control API, served
// as HTTP/1.1 under /v1 on the daemon's unix socket. Both the daemon and its
// clients (ttisctl, bench, eval) import it so the two sides cannot drift.
//
// Endpoints (HTTP/1.1 on the unix socket; any host name works, e.g.
// curl --unix-socket /run/ttis/ttisd.sock http://ttisd/v1/units):
//
//	GET  /v1/info                      Info: version, folders, runs dir
//	GET  /v1/units                     UnitList: every unit, in name order
//	GET  /v1/units/{name}?lines=N      UnitDetail with the last N log lines (default 10)
//	POST /v1/units/{name}/start        start (clears failed); answers UnitDetail
//	POST /v1/units/{name}/stop         stop; returns once the server is gone
//	POST /v1/units/{name}/restart      restart (clears failed and the start limit)
//	GET  /v1/units/{name}/logs?lines=N&follow=true
//	                                   LogLine objects, one JSON per line (x-ndjson);
//	                                   with follow the stream stays open
//	POST /v1/reload                    re-read the units folder; ReloadResult when done
//	GET  /v1/devices                   Devices: chips and the units holding them
//
// Errors are ErrorBody with a status: 404 unit_not_found, 409 conflict
// (the unit has no valid version or is disabled), 400 bad_request, 403 for
// browser requests (Origin/Referer), 500 internal, 503 unavailable.
//
// Evolution is additive: fields may be added, clients must ignore unknown
// fields, and the meaning of an existing field never changes.
package api

import (
	"time"

	"github.com/ttis-dev/ttis/units"
)

// Version is the control API version, sent in the HeaderAPI response header.
const Version = "1"

// HeaderAPI names the response header that carries Version.
const HeaderAPI = "Ttisd-Api"

// Unit states, following systemd's ActiveState.
const (
	StateInactive     = "inactive"
	StateActivating   = "activating"
	StateActive       = "active"
	StateDeactivating = "deactivating"
	StateFailed       = "failed"
)

// Unit sub-states, following systemd's SubState for services.
const (
	SubDead        = "dead"
	SubStart       = "start"
	SubRunning     = "running"
	SubAutoRestart = "auto-restart"
	SubStopSigterm = "stop-sigterm"
	SubStopSigkill = "stop-sigkill"
	SubReset       = "reset-device"
	SubFailed      = "failed"
)

// Unit results, following systemd's Result property: why the unit last
// stopped or failed. "success" means nothing went wrong.
const (
	ResultSuccess       = "success"
	ResultExitCode      = "exit-code"
	ResultSignal        = "signal"
	ResultTimeout       = "timeout"
	ResultStartLimitHit = "start-limit-hit"
	// ResultWatchdog: an active server stopped answering its health check.
	ResultWatchdog  = "watchdog"
	ResultResources = "resources"
	// ResultPreStart: the pre-start checks refused the start (a model file
	// outside the model folders, an empty secret file), as systemd's
	// ExecCondition= failing; the unit waits for the operator.
	ResultPreStart = "pre-start"
)

// Unit is one unit's state as listed by GET /v1/units.
type Unit struct {
	// View is the version of the unit that runs (the last good one; only
	// the name and path when the file has none), as units.View derives
	// it: name, model, device, chips, runtime, listen address, auth, eval
	// overrides. ttisctl's workflows resolve the server under test from
	// it (bench/target).
	units.View
	// Hash identifies the unit text being run (SHA-256 of the file, hex).
	Hash string `json:"hash,omitempty"`

	State    string `json:"state"`
	SubState string `json:"sub_state"`
	Result   string `json:"result,omitempty"`
	// PID of the unit's server process, 0 when none runs.
	PID int `json:"pid,omitempty"`
	// Restarts counts automatic restarts since the unit was last started
	// by hand or edited.
	Restarts int `json:"restarts"`
	// RestartsTotal counts automatic restarts since ttisd started; a
	// manual start or an edit never resets it.
	RestartsTotal int `json:"restarts_total"`
	// Workers sums up a media server's device workers as its last health
	// check reported them, e.g. "4 workers: 4 alive, 4 ready, 1 restarts,
	// 2 errors" (tt-media-server restarts a dead worker itself, so
	// Restarts does not count it).
	Workers string `json:"workers,omitempty"`
	// LastStartSeconds is how long the last start took to answer /health.
	LastStartSeconds float64 `json:"last_start_seconds,omitempty"`
	// Adopted is set while the server is one an earlier ttisd started and
	// this one adopted (it kept running across the daemon's restart).
	Adopted bool `json:"adopted,omitempty"`
	// Since is when the unit entered its current state.
	Since time.Time `json:"since"`
	// LastExit describes how the last server process ended, e.g.
	// "exited, status=1" or "killed, signal=KILL".
	LastExit string `json:"last_exit,omitempty"`
	// LastError is the most recent problem: a start or health failure, or
	// a load error of the unit file.
	LastError string `json:"last_error,omitempty"`
	// LoadState is "loaded", "error" (the file is broken and no good
	// version exists) or "stale" (a good older version runs; the new
	// text is broken).
	LoadState string `json:"load_state"`
	// LoadError is the error of the current file text, with file:line:col.
	LoadError string `json:"load_error,omitempty"`
	// LoadedAt is when the running version of the unit was read.
	LoadedAt time.Time `json:"loaded_at,omitzero"`
}

// Load states of a unit file.
const (
	LoadLoaded = "loaded"
	LoadError  = "error"
	LoadStale  = "stale"
)

// UnitDetail is GET /v1/units/{name}: the unit's state and view (Unit),
// its schedules, its recent log lines and what an edit would do.
type UnitDetail struct {
	Unit
	// Detail explains the state in one line, e.g. "using last good version
	// from …; new version invalid: …".
	Detail string `json:"detail,omitempty"`
	// MemoryBytes is the resident memory of the server process (Linux
	// VmRSS), 0 when no server runs or it cannot be read.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Schedules are the unit's [[schedule]] entries with their next firing.
	Schedules []Schedule `json:"schedules,omitempty"`
	// Logs holds the last lines the server printed, oldest first.
	Logs []LogLine `json:"logs,omitempty"`
	// Pending is what applying the unit file as it is on disk now would
	// do, when it differs from the version the daemon runs (the folder is
	// read a moment after each save, or on reload); nil when they match.
	Pending *Change `json:"pending_change,omitempty"`
	// LastChange is what the last accepted edit of the unit file did.
	LastChange *Change `json:"last_change,omitempty"`
}

// Change actions: what an edit of a unit file does (see the README's
// "What an edit does").
const (
	// ChangeKeep: the text means the same (comments, formatting); nothing
	// is done.
	ChangeKeep = "keep"
	// ChangeRetune: only daemon-side fields changed (description,
	// schedules, restart policy); the server is not touched.
	ChangeRetune = "retune"
	// ChangeReload: fields the server takes live changed (limits);
	// it re-reads its unit file on SIGHUP and keeps its pid.
	ChangeReload = "reload"
	// ChangeRestart: a field that shapes the server changed; it is replaced.
	ChangeRestart = "restart"
	// ChangeStart, ChangeStop: the unit starts (new, or enabled again) or
	// stops (disabled).
	ChangeStart = "start"
	ChangeStop  = "stop"
	// ChangeInvalid: the new text is broken; the last good version keeps
	// running.
	ChangeInvalid = "invalid"
)

// Change is what an edit of a unit file does, or did.
type Change struct {
	// Action is one of the Change* constants.
	Action string `json:"action"`
	// Fields are the changed keys ("limits.max_queue").
	Fields []string `json:"fields,omitempty"`
	// Error is the problem of an invalid text.
	Error string `json:"error,omitempty"`
	// Hash is the SHA-256 of the file text.
	Hash string `json:"hash,omitempty"`
	// At is when the change was applied (LastChange only).
	At time.Time `json:"at,omitzero"`
}

// Schedule is one [[schedule]] entry of a unit as the daemon runs it.
type Schedule struct {
	Workflow string    `json:"workflow"`
	Calendar string    `json:"calendar"`
	Timezone string    `json:"timezone,omitempty"`
	Limit    string    `json:"limit"`
	Next     time.Time `json:"next"`
	// Running is true while a run of the unit is going.
	Running bool `json:"running,omitempty"`
	// LastFire and LastResult describe the previous firing: "started",
	// "ok", "skipped: …" or "failed: …".
	LastFire   time.Time `json:"last_fire,omitzero"`
	LastResult string    `json:"last_result,omitempty"`
}

// LogLine is one line a unit's server printed, or a line the supervisor
// wrote about the unit.
type LogLine struct {
	Time time.Time `json:"time"`
	// Stream is "stdout", "stderr" or "ttisd".
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// UnitList is GET /v1/units.
type UnitList struct {
	Units []Unit `json:"units"`
	// Errors lists problems that belong to no unit, such as an unreadable
	// units folder.
	Errors []string `json:"errors,omitempty"`
}

// Info is GET /v1/info: where the daemon keeps its state.
type Info struct {
	Version  string    `json:"version"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	UnitsDir string    `json:"units_dir"`
	StateDir string    `json:"state_dir"`
	Socket   string    `json:"socket"`
	// RunsDir is where benchmark and eval results go (state_dir/runs).
	RunsDir string `json:"runs_dir"`
	// HubCache and HFEndpoint are the Hugging Face cache and Hub the
	// daemon's scheduled runs use (ttisd.toml hub_cache, hf_endpoint), so
	// that ttisctl pulls into the same cache.
	HubCache   string `json:"hub_cache,omitempty"`
	HFEndpoint string `json:"hf_endpoint,omitempty"`
	// ModelDirs are the folders cpu units may load model files from
	// (model_dirs, or its defaults), for ttisctl validate's pre-start
	// checks.
	ModelDirs []string `json:"model_dirs,omitempty"`
	// LastScan is when the units folder was last read.
	LastScan time.Time `json:"last_scan,omitzero"`
}

// ReloadResult is POST /v1/reload: the outcome of a full rescan.
type ReloadResult struct {
	Units   int      `json:"units"`
	Started []string `json:"started,omitempty"`
	Stopped []string `json:"stopped,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// Chip is one accelerator chip and the unit holding it.
type Chip struct {
	ID   int    `json:"id"`
	Path string `json:"path,omitempty"`
	// Present is false for a chip a unit claims that the host lacks.
	Present bool `json:"present"`
	// Holder is the unit that claims the chip, empty when free.
	Holder string `json:"holder,omitempty"`
}

// Devices is GET /v1/devices.
type Devices struct {
	Root  string `json:"root"`
	Chips []Chip `json:"chips"`
	// Error is set when the device folder could not be read.
	Error string `json:"error,omitempty"`
}

// Error codes of ErrorBody.
const (
	CodeNotFound    = "unit_not_found"
	CodeNoEndpoint  = "no_such_endpoint"
	CodeBadRequest  = "bad_request"
	CodeConflict    = "conflict"
	CodeInternal    = "internal"
	CodeUnavailable = "unavailable"
	// CodeBusy: the control socket is at a limit of ttisd.toml's
	// [control] table (HTTP 503, Retry-After); the message names it.
	CodeBusy = "busy"
)

// ErrorBody is the JSON body of every non-2xx response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-readable code and a human message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
