// Package units defines the unit file: one TOML file per served model in the
// daemon's units folder. It decodes unit files strictly, validates them
// against the model catalog and fills defaults.
package units

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// Unit is one declared inference server. The unit's name is its file name
// without the .toml extension.
type Unit struct {
	// Name and Path are not in the file; Load sets them.
	Name string `toml:"-" json:"name"`
	Path string `toml:"-" json:"path"`

	// Description is a line for people (ttisctl status); it never touches
	// the server.
	Description string `toml:"description" json:"description,omitempty"`
	// Model is a catalog model name (or HF repo) or a path to a local model
	// file (GGUF for the cpu runtime).
	Model string `toml:"model" json:"model"`
	// Device is a catalog device type (n150, n300, t3k, galaxy, p150, ...)
	// or "cpu", or "auto": the host's boards as tt-smi lists them, resolved
	// when the server starts (LoadWith).
	Device string `toml:"device" json:"device"`
	// Catalog is the model catalog the unit's spec comes from: "prod"
	// (default) or "dev", tt-inference-server's development specs.
	Catalog string `toml:"catalog" json:"catalog,omitempty"`
	// Chips lists /dev/tenstorrent/N ids claimed exclusively.
	Chips []int `toml:"chips" json:"chips,omitempty"`
	// Runtime is "vllm", "cpu" or "sim"; the default comes from the device.
	Runtime string `toml:"runtime" json:"runtime"`
	// Listen is the host:port the unit's inference server binds.
	Listen string `toml:"listen" json:"listen"`
	// Disabled units are validated but not started.
	Disabled bool `toml:"disabled" json:"disabled,omitempty"`

	Auth     Auth       `toml:"auth" json:"auth"`
	Limits   Limits     `toml:"limits" json:"limits"`
	Restart  Restart    `toml:"restart" json:"restart"`
	Schedule []Schedule `toml:"schedule" json:"schedule,omitempty"`
	Sim      Sim        `toml:"sim" json:"sim"`
	CPU      CPU        `toml:"cpu" json:"cpu"`
	Vllm     Vllm       `toml:"vllm" json:"vllm"`
	API      API        `toml:"api" json:"api"`
	// Media configures a media model's server (see Media).
	Media Media `toml:"media" json:"media"`
	// Tests shapes the spec-test step of the unit's releases and scheduled
	// runs (the catalog's suite for its model by default).
	Tests Tests `toml:"tests" json:"tests"`
	// Evals shapes the eval step of the unit's releases and scheduled runs
	// (the catalog's reference tasks by default).
	Evals Evals `toml:"evals" json:"evals"`

	// Spec is the catalog entry of a sim or vllm unit's (model, device);
	// Load sets it. Nil for cpu units.
	Spec *catalog.Spec `toml:"-" json:"-"`

	// pos remembers where each key is written, for errors found later
	// (cross-unit conflicts).
	pos positions
}

// View is a unit as everyone outside its server process sees it: what the
// daemon's control API sends for it (daemon/api.Unit embeds it, so its JSON
// names are the API's), and what a workflow needs to find, authenticate
// with and grade the unit's server (bench/target resolves the server under
// test from it, whether ttisctl read it from the control API or ttisd's
// schedules took it from the unit file). It is derived in one place,
// (*Unit).View, beside the schema: a unit field a workflow needs is added to
// the schema and here, and read by the workflow, nowhere else.
type View struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
	Model       string `json:"model,omitempty"`
	Device      string `json:"device,omitempty"`
	Chips       []int  `json:"chips,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	// Listen is where the server listens; BaseURL is the URL a local
	// client dials for it.
	Listen   string `json:"listen,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// AuthMode is the unit's auth mode ("none", "api-key", "jwt") and
	// AuthSecretFile the secret file clients need to authenticate (an
	// absolute path: Parse resolved it).
	AuthMode       string `json:"auth_mode,omitempty"`
	AuthSecretFile string `json:"auth_secret_file,omitempty"`
	// AuthMaxTokenLifetimeSeconds is a jwt unit's max_token_lifetime: the
	// tokens clients mint for it must not live longer.
	AuthMaxTokenLifetimeSeconds int64 `json:"auth_max_token_lifetime_seconds,omitempty"`
	// Evals are the unit's eval overrides ([evals]), which releases of the
	// unit follow whoever starts them.
	Evals Evals `json:"evals,omitzero"`
	// Tests are the unit's spec-test overrides ([tests]), which releases of
	// the unit follow whoever starts them.
	Tests Tests `json:"tests,omitzero"`
	// MaxConcurrency and MaxAudioSeconds are the unit's limits the spec
	// tests hold a server to when the catalog has no spec for its model
	// (limits.max_concurrency, [media] max_audio_duration_seconds).
	MaxConcurrency  int     `json:"max_concurrency,omitempty"`
	MaxAudioSeconds float64 `json:"max_audio_seconds,omitempty"`
	// TraceCapture is a vllm unit's [vllm] trace_capture with its default
	// (nil for other runtimes): whether benchmarks warm its server up per
	// (ISL, batch).
	TraceCapture *bool `json:"trace_capture,omitempty"`
	// Catalog is the unit's catalog when it is "dev" (empty for prod):
	// benchmarks grade against that catalog's spec.
	Catalog string `json:"catalog,omitempty"`
}

// View derives the unit's view from a valid unit (see View).
func (u *Unit) View() View {
	v := View{Name: u.Name, Path: u.Path, Description: u.Description, Model: u.Model, Device: u.Device,
		Chips: slices.Clone(u.Chips), Runtime: u.Runtime, Listen: u.Listen, Disabled: u.Disabled,
		AuthMode: u.Auth.Mode, AuthSecretFile: u.Auth.SecretFile,
		AuthMaxTokenLifetimeSeconds: int64(u.Auth.MaxTokenLifetime.Seconds()), Evals: u.Evals.clone(),
		Tests: u.Tests.clone(), MaxConcurrency: u.Limits.MaxConcurrency, MaxAudioSeconds: u.Media.MaxAudioDurationSeconds}
	if u.Runtime == RuntimeVllm {
		on := u.Vllm.TraceCaptureOn()
		v.TraceCapture = &on
	}
	if u.Catalog == catalog.ModeDev {
		v.Catalog = u.Catalog
	}
	return v
}

// MaxTokenLifetime is AuthMaxTokenLifetimeSeconds as a duration (0: no
// bound).
func (v *View) MaxTokenLifetime() time.Duration {
	return time.Duration(v.AuthMaxTokenLifetimeSeconds) * time.Second
}

// BaseURL is the URL a client on this host dials for the unit's server
// (see BaseURL).
func (v *View) BaseURL() (string, error) { return BaseURL(v.Listen) }

// Auth selects how the inference API authenticates clients.
type Auth struct {
	// Mode is "none", "api-key" or "jwt" (HS256).
	Mode string `toml:"mode" json:"mode"`
	// SecretFile holds the API key or the JWT secret. It must not be
	// readable by group or others.
	SecretFile string `toml:"secret_file" json:"secret_file,omitempty"`
	// MaxTokenLifetime (jwt) bounds how long a token may stay valid: its
	// exp may lie at most this far after now (and after its iat), so a
	// leaked token dies within it. Default DefaultMaxTokenLifetime.
	MaxTokenLifetime Duration `toml:"max_token_lifetime" json:"max_token_lifetime,omitzero"`
	// AllowNoExpiry (jwt) accepts tokens without exp, as
	// tt-inference-server mints them; off by default, since such a token
	// works until the secret changes.
	AllowNoExpiry bool `toml:"allow_no_expiry" json:"allow_no_expiry,omitempty"`
}

// DefaultMaxTokenLifetime is a jwt unit's max_token_lifetime when unset: a
// day covers a scheduled run's token (ttisd mints 24 h ones).
const DefaultMaxTokenLifetime = 24 * time.Hour

// Limits bounds the work a unit accepts. Zero values are filled from the
// catalog entry for (model, device).
type Limits struct {
	// MaxConcurrency is how many requests the engine runs at once (the
	// catalog's batch size; 8 on the cpu runtime).
	MaxConcurrency int `toml:"max_concurrency" json:"max_concurrency"`
	// MaxContext caps prompt plus output tokens (the catalog's; the model
	// file's on the cpu runtime).
	MaxContext int `toml:"max_context" json:"max_context"`
	// MaxQueue is how many requests may wait for a slot; more are refused
	// with 429 (default: 4 x max_concurrency, at least 16).
	MaxQueue int `toml:"max_queue" json:"max_queue"`
	// RequestTimeout bounds one request end to end (default 10m).
	RequestTimeout Duration `toml:"request_timeout" json:"request_timeout"`
	// MaxBodyBytes limits request bodies.
	MaxBodyBytes int `toml:"max_body_bytes" json:"max_body_bytes"`
	// MaxInflightBytes bounds the bytes of request bodies the server
	// decodes and tokenizes at once: a request counts from its arrival
	// until its prompt is tokenized (or, on a media or vllm unit, until it
	// holds its slot); more wait in the queue (default 2 x max_body_bytes;
	// at least max_body_bytes).
	MaxInflightBytes int64 `toml:"max_inflight_bytes" json:"max_inflight_bytes"`
	// WriteTimeout ends a stream whose client accepts nothing for this
	// long (a write blocked, or nothing acknowledged), freeing its slot
	// (default 30s).
	WriteTimeout Duration `toml:"write_timeout" json:"write_timeout"`
}

// Restart is the systemd-style restart policy of the unit's server process.
type Restart struct {
	// Policy is "no", "on-failure" or "always".
	Policy string `toml:"policy" json:"policy"`
	// Delay is the wait before the first restart; it doubles up to MaxDelay.
	Delay Duration `toml:"delay" json:"delay"`
	// MaxDelay caps the doubling restart delay (default 1m).
	MaxDelay Duration `toml:"max_delay" json:"max_delay"`
	// Burst starts within Interval put the unit into the failed state.
	Burst int `toml:"burst" json:"burst"`
	// Interval is the window in which Burst starts count (default 10m).
	Interval Duration `toml:"interval" json:"interval"`
	// ReadyTimeout is how long the server may take to answer /health.
	ReadyTimeout Duration `toml:"ready_timeout" json:"ready_timeout"`
	// StopTimeout is how long SIGTERM may take before SIGKILL.
	StopTimeout Duration `toml:"stop_timeout" json:"stop_timeout"`
	// ResetDevice runs the device reset command before a restart.
	ResetDevice bool `toml:"reset_device" json:"reset_device"`
}

// Schedule runs a workflow against the unit on a calendar.
type Schedule struct {
	// Workflow is "benchmarks", "evals", "tests" or "release".
	Workflow string `toml:"workflow" json:"workflow"`
	// Calendar is a 5-field cron spec.
	Calendar string `toml:"calendar" json:"calendar"`
	// Limit is the run size: smoke, ci-commit, ci-nightly (default),
	// ci-long or full.
	Limit limit.Mode `toml:"limit" json:"limit"`
	// Timezone is the IANA zone the calendar is read in ("UTC" when empty).
	Timezone string `toml:"timezone" json:"timezone,omitempty"`
}

// Evals overrides, for one unit, what its releases and scheduled runs
// evaluate. Without it they run the catalog's reference tasks for the
// model with the run size's limits; a reference left out of Tasks is
// reported as not measured, so a unit cannot pass by skipping one.
type Evals struct {
	// Tasks replaces the catalog's reference tasks.
	Tasks []string `toml:"tasks" json:"tasks,omitempty"`
	// API is "completions" (default; the chat template applied, as
	// tt-inference-server does) or "chat".
	API string `toml:"api" json:"api,omitempty"`
	// Limits maps a task to its documents: a count (1 or more) or a fraction
	// in (0, 1), instead of the run size's.
	Limits map[string]float64 `toml:"limits" json:"limits,omitempty"`
	// Datasets maps a task to a local dataset file in the dataset's own
	// column layout (relative paths are from the unit file's folder).
	Datasets map[string]string `toml:"datasets" json:"datasets,omitempty"`
}

// IsZero reports whether the unit overrides nothing of its evals (the
// control API then leaves "evals" out). TestOverridesIsZero fails when a new
// field is missing here.
func (e Evals) IsZero() bool {
	return len(e.Tasks) == 0 && e.API == "" && len(e.Limits) == 0 && len(e.Datasets) == 0
}

// clone is e with its own slices and maps.
func (e Evals) clone() Evals {
	c := e
	c.Tasks, c.Limits, c.Datasets = slices.Clone(e.Tasks), maps.Clone(e.Limits), maps.Clone(e.Datasets)
	return c
}

// Tests overrides, for one unit, the spec tests its releases and
// scheduled runs hold (bench/spectest). Without it they run the catalog's
// suite for the model's class on its device. A skipped test is reported
// as not run, so a unit cannot pass by skipping a required one.
type Tests struct {
	// Suite names the catalog suite to run instead of the spec's ("text"
	// for a cpu unit's GGUF model, which has no spec, is the default).
	Suite string `toml:"suite" json:"suite,omitempty"`
	// Skip lists tests not to run (each is reported as not run).
	Skip []string `toml:"skip" json:"skip,omitempty"`
	// StabilityDuration replaces the run size's length of the stability
	// test's steady load.
	StabilityDuration Duration `toml:"stability_duration" json:"stability_duration,omitzero"`
	// StabilityConcurrency is how many requests the stability test keeps
	// in flight (default: the spec's max_concurrency, or the unit's).
	StabilityConcurrency int `toml:"stability_concurrency" json:"stability_concurrency,omitempty"`
}

// IsZero reports whether the unit overrides nothing of its spec tests (the
// control API then leaves "tests" out). TestOverridesIsZero fails when a new
// field is missing here.
func (t Tests) IsZero() bool {
	return t.Suite == "" && len(t.Skip) == 0 && t.StabilityDuration.Duration == 0 && t.StabilityConcurrency == 0
}

// clone is t with its own slices.
func (t Tests) clone() Tests {
	c := t
	c.Skip = slices.Clone(t.Skip)
	return c
}

// Sim configures the simulated accelerator.
type Sim struct {
	// TimeScale multiplies every simulated delay; 0 runs as fast as the
	// server takes the output (for overhead benchmarks), 1 follows the
	// catalog's targets. Nil means 1.
	TimeScale *float64 `toml:"time_scale" json:"time_scale,omitempty"`
	// Seed makes the generated text reproducible.
	Seed int64 `toml:"seed" json:"seed"`
}

// CPU configures the pure-Go engine.
type CPU struct {
	// Threads is the number of worker threads; 0 uses every core.
	Threads int `toml:"threads" json:"threads"`
	// KVCacheType is the key/value cache's element type, one of
	// KVCacheTypes: "f16" (the default when empty; llama.cpp's default) or
	// "f32" (twice the memory).
	KVCacheType string `toml:"kv_cache_type" json:"kv_cache_type,omitempty"`
}

// KVType is KVCacheType with the default filled in.
func (c CPU) KVType() string {
	if c.KVCacheType == "" {
		return DefaultKVCacheType
	}
	return c.KVCacheType
}

// Vllm configures the vLLM/tt-metal server the unit supervises.
type Vllm struct {
	// Command runs the server locally; empty uses docker with Image.
	Command []string `toml:"command" json:"command,omitempty"`
	// Image overrides the catalog's docker image.
	Image string `toml:"image" json:"image,omitempty"`
	// Port the upstream server listens on (loopback).
	Port int `toml:"port" json:"port,omitempty"`
	// Env adds environment variables to the upstream server.
	Env map[string]string `toml:"env" json:"env,omitempty"`
	// Args adds or overrides vLLM arguments.
	Args map[string]string `toml:"args" json:"args,omitempty"`
	// WeightsDir and CacheDir are mounted into the container.
	WeightsDir string `toml:"weights_dir" json:"weights_dir,omitempty"`
	// CacheDir is mounted into the container as the server's cache.
	CacheDir string `toml:"cache_dir" json:"cache_dir,omitempty"`
	// StallTimeout fails the start when the upstream neither prints output
	// nor becomes healthy for this long (0 = 10m).
	StallTimeout Duration `toml:"stall_timeout" json:"stall_timeout"`
	// OverrideTTConfig is merged over the catalog's override_tt_config (a
	// key set to "" deletes the catalog's value) and reaches vLLM as
	// --additional-config {"tt": ...}.
	OverrideTTConfig map[string]any `toml:"override_tt_config" json:"override_tt_config,omitempty"`
	// HFTokenFile holds the Hugging Face token the container downloads
	// gated weights with (mode 0600; passed through an env file, never in
	// argv, logs or status).
	HFTokenFile string `toml:"hf_token_file" json:"hf_token_file,omitempty"`
	// TraceCapture warms the server up by capturing tt-metal traces: the
	// container's own capture at start, and benchmarks' warm-up for each
	// (ISL, batch) of their sweep. Nil means true.
	TraceCapture *bool `toml:"trace_capture" json:"trace_capture,omitempty"`
	// HostChecks is what a failed host readiness check does before a start:
	// "enforce" (default) blocks the start, "warn" logs and starts anyway.
	HostChecks string `toml:"host_checks" json:"host_checks,omitempty"`
}

// TraceCaptureOn reports whether trace capture is enabled (the default).
func (v Vllm) TraceCaptureOn() bool { return v.TraceCapture == nil || *v.TraceCapture }

// API selects the inference APIs a unit serves besides the OpenAI one.
type API struct {
	// Legacy serves the older Tenstorrent inference API (raw text
	// streamed with HTTP/1.1 chunked encoding, {"status_code","message"}
	// errors) at LegacyRoute, on every runtime.
	Legacy bool `toml:"legacy" json:"legacy,omitempty"`
	// LegacyRoute is its path; "" means "/inference/<unit name>", as the
	// original served "/inference/<model route name>".
	LegacyRoute string `toml:"legacy_route" json:"legacy_route,omitempty"`
}

// Duration is a time.Duration written in TOML as a string with a unit
// ("30s", "10m"). A bare number is an error rather than nanoseconds.
type Duration struct{ time.Duration }

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a unit, e.g. \"30s\", \"10m\")", b)
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a string such as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }
