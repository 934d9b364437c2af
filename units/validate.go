package units

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/hardened"
	"github.com/ttis-dev/ttis/units/limit"
)

// Runtimes.
const (
	RuntimeVllm = "vllm"
	RuntimeCPU  = "cpu"
	RuntimeSim  = "sim"
)

// DeviceCPU is the host CPU: no chips, cpu runtime.
const DeviceCPU = "cpu"

// Auth modes.
const (
	AuthNone   = "none"
	AuthAPIKey = "api-key"
	AuthJWT    = "jwt"
)

// Restart policies (systemd's Restart= values that matter here).
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Defaults filled into units that leave a setting out.
const (
	// DefaultCPUMaxConcurrency is the batch size of cpu units: the Go engine
	// gains little from wider batches on a host CPU.
	DefaultCPUMaxConcurrency = 8
	// DefaultCPUMaxContext 0 lets the engine use the model file's context.
	DefaultCPUMaxContext = 0
	// MinMaxQueue is the smallest default queue; the default is otherwise
	// 4 × max_concurrency, enough to absorb a burst while a batch runs.
	MinMaxQueue = 16
	// DefaultRequestTimeout bounds one request end to end.
	DefaultRequestTimeout = 10 * time.Minute
	// DefaultMaxBodyBytes bounds request bodies (long prompts fit easily).
	DefaultMaxBodyBytes = 8 << 20
	// DefaultWriteTimeout is how long a stream may wait for a client that
	// accepts nothing.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultRestartPolicy restarts crashed servers but not clean exits.
	DefaultRestartPolicy = RestartOnFailure
	// DefaultRestartDelay is the first back-off; it doubles up to
	// DefaultRestartMaxDelay.
	DefaultRestartDelay    = time.Second
	DefaultRestartMaxDelay = time.Minute
	// DefaultRestartBurst starts within DefaultRestartInterval put a unit
	// into the failed state (systemd's StartLimitBurst/IntervalSec).
	DefaultRestartBurst    = 5
	DefaultRestartInterval = 10 * time.Minute
	// DefaultReadyTimeoutVllm covers loading weights and building the
	// tensor cache on hardware; other runtimes start in seconds.
	DefaultReadyTimeoutVllm = 10 * time.Minute
	DefaultReadyTimeout     = 2 * time.Minute
	// DefaultStopTimeout is how long SIGTERM may take before SIGKILL.
	DefaultStopTimeout = 30 * time.Second
)

var unitNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]*$`)

// validate checks u and fills defaults; dir resolves relative paths.
// DeviceAuto is the device value that asks for detection.
const DeviceAuto = "auto"

func validate(c *errorsOf, u *Unit, dir string) {
	if _, err := catalog.ParseMode(u.Catalog); err != nil {
		c.add("catalog", "%v", err)
		u.Catalog = catalog.ModeProd
	}
	if !unitNameRE.MatchString(u.Name) {
		c.add("", "unit name %q (the file name) must start with a letter or digit and contain only letters, digits, '.', '_', '@' and '-'", u.Name)
	}
	dev, devOK := validateDevice(c, u)
	validateRuntime(c, u, dev, devOK, dir)
	validateChips(c, u, dev, devOK)
	validateListen(c, u)
	validateAuth(c, u, dir)
	validateLimits(c, u)
	validateRestart(c, u)
	validateSchedules(c, u)
	validateSections(c, u)
	validateVllm(c, u, dir)
	validateEvals(c, u, dir)
	validateTests(c, u)
	validateAPI(c, u)
	validateMedia(c, u, dev, devOK)
}

// validateEvals checks the eval overrides' shape; whether a task exists
// is the eval suite's to say when a run plans it (units knows no tasks).
func validateEvals(c *errorsOf, u *Unit, dir string) {
	e := &u.Evals
	for i, t := range e.Tasks {
		if strings.TrimSpace(t) == "" {
			c.add("evals.tasks."+strconv.Itoa(i), "empty task name")
		}
	}
	switch e.API {
	case "", "completions", "chat":
	default:
		c.add("evals.api", "unknown API %q (want completions or chat)", e.API)
	}
	for task, v := range e.Limits {
		if _, err := limit.DocsOf(v); err != nil {
			c.add("evals.limits."+task, "%v", err)
		}
	}
	for task, p := range e.Datasets {
		if p == "" {
			c.add("evals.datasets."+task, "empty path")
			continue
		}
		e.Datasets[task] = resolvePath(dir, p)
	}
}

// validateTests checks the spec-test overrides against the catalog: the
// suite must test the unit's model class, and a skipped test must be one
// of the unit's suite.
func validateTests(c *errorsOf, u *Unit) {
	t := &u.Tests
	var suite catalog.SpecTestSuite
	var err error
	switch {
	case t.Suite != "":
		if suite, err = catalog.SpecTestSuiteNamed(t.Suite, "", ""); err != nil {
			c.add("tests.suite", "%v", err)
		} else if u.Spec != nil && !slices.Contains(suite.ModelTypes, u.Spec.ModelType) {
			c.add("tests.suite", "suite %q tests %s models; %s is a %s model", t.Suite, strings.Join(suite.ModelTypes, ", "), u.Spec.ModelName, u.Spec.ModelType)
			err = errors.New("wrong suite")
		}
	case u.Spec != nil:
		suite, err = catalog.SpecTestSuiteFor(u.Spec)
	default:
		// A model the catalog does not know is tested as text.
		suite, err = catalog.SpecTestSuiteNamed("text", "", "")
	}
	names := catalog.SpecTestNames()
	if err == nil {
		names = names[:0]
		for _, tc := range suite.Tests {
			names = append(names, tc.Name)
		}
	}
	for i, name := range t.Skip {
		if !slices.Contains(names, name) {
			where := ""
			if err == nil {
				where = " of suite " + suite.Name
			}
			c.add("tests.skip."+strconv.Itoa(i), "unknown test %q (want one of%s: %s)", name, where, strings.Join(names, ", "))
		}
	}
	if t.StabilityConcurrency < 0 {
		c.add("tests.stability_concurrency", "must not be negative, got %d", t.StabilityConcurrency)
	}
}

// reservedRoutes are the OpenAI API's paths; the legacy route may not
// shadow them.
var reservedRoutes = []string{"/v1/", "/health", "/version", "/metrics", "/tokenize", "/detokenize", "/tokenizer_info"}

var routeRE = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$`)

func validateAPI(c *errorsOf, u *Unit) {
	a := &u.API
	if a.LegacyRoute != "" && !a.Legacy {
		c.add("api.legacy_route", "is set but api.legacy is false; set legacy = true to serve the legacy API")
		return
	}
	if !a.Legacy {
		return
	}
	if a.LegacyRoute == "" {
		a.LegacyRoute = "/inference/" + u.Name
		return
	}
	if !routeRE.MatchString(a.LegacyRoute) || strings.Contains(a.LegacyRoute, "//") || len(a.LegacyRoute) > 256 {
		c.add("api.legacy_route", "%q is not a URL path (want e.g. \"/inference/falcon40b\")", a.LegacyRoute)
		return
	}
	for _, r := range reservedRoutes {
		if a.LegacyRoute == strings.TrimSuffix(r, "/") || strings.HasPrefix(a.LegacyRoute, r) || (strings.HasSuffix(r, "/") && a.LegacyRoute+"/" == r) {
			c.add("api.legacy_route", "%q is a path of the OpenAI API; choose another, e.g. \"/inference/%s\"", a.LegacyRoute, u.Name)
			return
		}
	}
}

func validateDevice(c *errorsOf, u *Unit) (catalog.DeviceType, bool) {
	if u.Device == "" {
		c.add("device", "required (a device type such as n150, n300, t3k, p150 or cpu, or \"auto\")")
		return catalog.DeviceType{}, false
	}
	if u.Device == DeviceAuto {
		// Resolved where the server runs (LoadWith); until then the
		// checks that need a device wait.
		if u.Runtime == "" {
			u.Runtime = RuntimeVllm
		}
		return catalog.DeviceType{}, false
	}
	d, err := catalog.Device(u.Device)
	if err != nil {
		c.add("device", "%v", err)
		return catalog.DeviceType{}, false
	}
	u.Device = d.Name
	return d, true
}

func validateRuntime(c *errorsOf, u *Unit, dev catalog.DeviceType, devOK bool, dir string) {
	if u.Runtime == "" && devOK {
		// cpu devices run the Go engine; everything else the vLLM server.
		u.Runtime = RuntimeVllm
		if dev.Name == DeviceCPU {
			u.Runtime = RuntimeCPU
		}
	}
	if u.Model == "" {
		c.add("model", "required (a catalog model name, or a model file path for the cpu runtime)")
	}
	switch u.Runtime {
	case RuntimeCPU:
		if devOK && dev.Name != DeviceCPU {
			c.add("runtime", "runtime cpu needs device = \"cpu\", not %q", u.Device)
		}
		if u.Model != "" {
			validateModelFile(c, u, dir)
		}
	case RuntimeSim, RuntimeVllm:
		if u.Model == "" || !devOK {
			return
		}
		spec, err := catalog.LookupIn(u.Catalog, u.Model, u.Device)
		if err != nil {
			field := "model"
			if strings.Contains(err.Error(), "does not support device") {
				field = "device"
			}
			msg := err.Error()
			// A model or device only the development specs have: say how
			// to use them rather than leave the operator guessing.
			if u.Catalog != catalog.ModeDev {
				if _, derr := catalog.LookupIn(catalog.ModeDev, u.Model, u.Device); derr == nil {
					msg += ` (the dev catalog has it: set catalog = "dev", as run.py's --dev-mode)`
				}
			}
			c.add(field, "%s", msg)
			return
		}
		u.Spec = spec
	case "":
	default:
		c.add("runtime", "unknown runtime %q (want vllm, cpu or sim)", u.Runtime)
	}
}

// validateModelFile resolves a cpu unit's model path against the unit's
// folder and checks it is a readable regular file.
func validateModelFile(c *errorsOf, u *Unit, dir string) {
	p := resolvePath(dir, u.Model)
	st, err := os.Stat(p)
	if err != nil {
		c.add("model", "model file %s: %v", p, unwrapPathError(err))
		return
	}
	if !st.Mode().IsRegular() {
		c.add("model", "model file %s is not a regular file", p)
		return
	}
	// Opened the hardened way: a pipe swapped in after the stat must not
	// block the load. Model files have no size bound here.
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	f, err := hardened.Open(ctx, p, math.MaxInt64)
	if err != nil {
		c.add("model", "model file %s is not readable: %v", p, hardened.WithoutPath(err))
		return
	}
	f.Close()
	u.Model = p
}

func validateChips(c *errorsOf, u *Unit, dev catalog.DeviceType, devOK bool) {
	seen := map[int]int{}
	for i, chip := range u.Chips {
		path := "chips." + strconv.Itoa(i)
		if chip < 0 {
			c.add(path, "chip id %d is negative", chip)
			continue
		}
		if j, dup := seen[chip]; dup {
			c.add(path, "chip %d is listed twice (also chips[%d])", chip, j)
			continue
		}
		seen[chip] = i
	}
	if !devOK {
		return
	}
	if !dev.Hardware() {
		if len(u.Chips) > 0 {
			c.add("chips", "device %s has no Tenstorrent chips to claim", dev.Name)
		}
		return
	}
	if len(u.Chips) > 0 && len(u.Chips) != dev.Chips {
		c.add("chips", "device %s has %d chips, but %s listed", dev.Name, dev.Chips, plural(len(u.Chips), "is", "are"))
	}
	if len(u.Chips) == 0 && u.Runtime == RuntimeVllm {
		c.add("chips", "required for runtime vllm on device %s: the %d chip ids the unit claims (e.g. chips = %s)", dev.Name, dev.Chips, exampleChips(dev.Chips))
	}
}

// plural writes "1 is" or "2 are".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func exampleChips(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return "[" + strings.Join(ids, ", ") + "]"
}

func validateListen(c *errorsOf, u *Unit) {
	if u.Listen == "" {
		c.add("listen", "required (host:port, e.g. \"127.0.0.1:8000\")")
		return
	}
	_, port, err := net.SplitHostPort(u.Listen)
	if err != nil {
		c.add("listen", "%q is not host:port: %v", u.Listen, strings.TrimPrefix(err.Error(), "address "+u.Listen+": "))
		return
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		c.add("listen", "invalid port %q in %q (want 1-65535)", port, u.Listen)
	}
}

func validateAuth(c *errorsOf, u *Unit, dir string) {
	if u.Auth.Mode == "" {
		u.Auth.Mode = AuthNone
	}
	switch u.Auth.Mode {
	case AuthNone:
		if u.Auth.SecretFile != "" {
			c.add("auth.secret_file", "only used with mode \"api-key\" or \"jwt\"")
		}
	case AuthAPIKey, AuthJWT:
	default:
		c.add("auth.mode", "unknown mode %q (want none, api-key or jwt)", u.Auth.Mode)
		return
	}
	if u.Auth.Mode != AuthJWT {
		if u.Auth.MaxTokenLifetime.Duration != 0 {
			c.add("auth.max_token_lifetime", "only used with mode \"jwt\"")
		}
		if u.Auth.AllowNoExpiry {
			c.add("auth.allow_no_expiry", "only used with mode \"jwt\"")
		}
	} else {
		switch d := u.Auth.MaxTokenLifetime.Duration; {
		case d < 0:
			c.add("auth.max_token_lifetime", "negative duration %s (want e.g. \"24h\")", d)
		case d == 0:
			u.Auth.MaxTokenLifetime.Duration = DefaultMaxTokenLifetime
		case d < time.Second:
			c.add("auth.max_token_lifetime", "%s is shorter than a second (want e.g. \"24h\")", d)
		}
	}
	if u.Auth.Mode == AuthNone {
		return
	}
	if u.Auth.SecretFile == "" {
		c.add("auth.secret_file", "required for mode %q (a file holding the secret, mode 0600)", u.Auth.Mode)
		return
	}
	p := resolvePath(dir, u.Auth.SecretFile)
	st, err := os.Stat(p)
	if err != nil {
		c.add("auth.secret_file", "secret file %s: %v", p, unwrapPathError(err))
		return
	}
	if !st.Mode().IsRegular() {
		c.add("auth.secret_file", "secret file %s is not a regular file", p)
		return
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		c.add("auth.secret_file", "secret file %s has mode %04o; it must not be readable or writable by group or others (chmod 600)", p, perm)
		return
	}
	u.Auth.SecretFile = p
}

// Host check modes of [vllm] host_checks.
const (
	HostChecksEnforce = "enforce"
	HostChecksWarn    = "warn"
)

// validateVllm checks the [vllm] settings that name files and modes;
// relative paths are taken from the unit file's folder.
func validateVllm(c *errorsOf, u *Unit, dir string) {
	v := &u.Vllm
	switch v.HostChecks {
	case "", HostChecksEnforce, HostChecksWarn:
	default:
		c.add("vllm.host_checks", "unknown mode %q (want %q: a failed check blocks the start, or %q: it is logged)", v.HostChecks, HostChecksEnforce, HostChecksWarn)
	}
	v.WeightsDir, v.CacheDir = resolvePath(dir, v.WeightsDir), resolvePath(dir, v.CacheDir)
	if u.Runtime == RuntimeVllm && u.Spec != nil && u.Spec.DockerImage == "" && v.Image == "" && len(v.Command) == 0 {
		c.add("catalog", "the %s catalog pins no image for %s: set [vllm] image (run.py's --dev-mode needs --override-docker-image too) or [vllm] command", u.Catalog, u.Spec.ModelName)
	}
	if v.HFTokenFile != "" {
		p := resolvePath(dir, v.HFTokenFile)
		st, err := os.Stat(p)
		switch {
		case err != nil:
			c.add("vllm.hf_token_file", "token file %s: %v", p, unwrapPathError(err))
		case !st.Mode().IsRegular():
			c.add("vllm.hf_token_file", "token file %s is not a regular file", p)
		case st.Mode().Perm()&0o077 != 0:
			c.add("vllm.hf_token_file", "token file %s has mode %04o; it must not be readable or writable by group or others (chmod 600)", p, st.Mode().Perm())
		default:
			v.HFTokenFile = p
		}
	}
	for k := range v.OverrideTTConfig {
		if k == "" {
			c.add("vllm.override_tt_config", "empty key")
		}
	}
}

func validateLimits(c *errorsOf, u *Unit) {
	l := &u.Limits
	for _, f := range []struct {
		key string
		v   int
	}{
		{"limits.max_concurrency", l.MaxConcurrency},
		{"limits.max_context", l.MaxContext},
		{"limits.max_queue", l.MaxQueue},
		{"limits.max_body_bytes", l.MaxBodyBytes},
	} {
		if f.v < 0 {
			c.add(f.key, "must be positive, got %d", f.v)
		}
	}
	if s := u.Spec; s != nil {
		if l.MaxContext > s.MaxContext {
			c.add("limits.max_context", "%d exceeds the catalog's max_context %d for %s on %s", l.MaxContext, s.MaxContext, s.ModelName, s.Device)
		}
		if s.MaxConcurrency > 0 && l.MaxConcurrency > s.MaxConcurrency {
			c.add("limits.max_concurrency", "%d exceeds the catalog's max_concurrency %d for %s on %s", l.MaxConcurrency, s.MaxConcurrency, s.ModelName, s.Device)
		}
		// Catalog units default to the catalog's limits for (model, device).
		if l.MaxConcurrency == 0 {
			l.MaxConcurrency = s.MaxConcurrency
		}
		if l.MaxContext == 0 {
			l.MaxContext = s.MaxContext
		}
	} else if u.Runtime == RuntimeCPU && l.MaxConcurrency == 0 {
		l.MaxConcurrency = DefaultCPUMaxConcurrency
	}
	if l.MaxQueue == 0 && l.MaxConcurrency > 0 {
		l.MaxQueue = max(4*l.MaxConcurrency, MinMaxQueue)
	}
	if l.RequestTimeout.Duration == 0 {
		l.RequestTimeout.Duration = DefaultRequestTimeout
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = defaultBodyBytes(u)
	}
	switch {
	case l.MaxInflightBytes < 0:
		c.add("limits.max_inflight_bytes", "must be positive, got %d", l.MaxInflightBytes)
	case l.MaxInflightBytes == 0 && l.MaxBodyBytes > 0:
		l.MaxInflightBytes = 2 * int64(l.MaxBodyBytes)
	case l.MaxInflightBytes > 0 && l.MaxInflightBytes < int64(l.MaxBodyBytes):
		c.add("limits.max_inflight_bytes", "%d is less than limits.max_body_bytes (%d): a request of the largest size could never be read", l.MaxInflightBytes, l.MaxBodyBytes)
	}
	switch d := l.WriteTimeout.Duration; {
	case d == 0:
		l.WriteTimeout.Duration = DefaultWriteTimeout
	case d < time.Second:
		c.add("limits.write_timeout", "%s is shorter than a second (want e.g. \"30s\")", d)
	}
}

func validateRestart(c *errorsOf, u *Unit) {
	r := &u.Restart
	switch r.Policy {
	case "":
		r.Policy = DefaultRestartPolicy
	case RestartNo, RestartOnFailure, RestartAlways:
	default:
		c.add("restart.policy", "unknown policy %q (want no, on-failure or always)", r.Policy)
	}
	if r.Burst < 0 {
		c.add("restart.burst", "must be positive, got %d", r.Burst)
	}
	setDefault(&r.Delay, DefaultRestartDelay)
	setDefault(&r.MaxDelay, DefaultRestartMaxDelay)
	setDefault(&r.Interval, DefaultRestartInterval)
	setDefault(&r.StopTimeout, DefaultStopTimeout)
	if u.Runtime == RuntimeVllm {
		setDefault(&r.ReadyTimeout, DefaultReadyTimeoutVllm)
	} else {
		setDefault(&r.ReadyTimeout, DefaultReadyTimeout)
	}
	if r.Burst == 0 {
		r.Burst = DefaultRestartBurst
	}
	if r.Delay.Duration > r.MaxDelay.Duration {
		c.add("restart.delay", "%s is longer than max_delay %s", r.Delay.Duration, r.MaxDelay.Duration)
	}
}

func setDefault(d *Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

func validateSchedules(c *errorsOf, u *Unit) {
	for i := range u.Schedule {
		s := &u.Schedule[i]
		base := "schedule." + strconv.Itoa(i) + "."
		if !slices.Contains(scheduleWorkflows, s.Workflow) {
			c.add(base+"workflow", "unknown workflow %q (want %s)", s.Workflow, strings.Join(scheduleWorkflows, ", "))
		}
		if s.Limit == "" {
			s.Limit = limit.DefaultSchedule
		} else if m, err := limit.Parse(string(s.Limit)); err != nil {
			c.add(base+"limit", "unknown limit %q (want %s)", s.Limit, limit.Names())
		} else {
			s.Limit = m
		}
		if s.Timezone != "" {
			if _, err := time.LoadLocation(s.Timezone); err != nil {
				c.add(base+"timezone", "unknown timezone %q", s.Timezone)
				continue
			}
		}
		if s.Calendar == "" {
			c.add(base+"calendar", "required (a 5-field cron spec such as \"0 2 * * *\")")
			continue
		}
		if _, err := s.Cron(); err != nil {
			c.add(base+"calendar", "%v", err)
		}
	}
}

// validateSections checks runtime-specific settings and refuses those a
// unit's runtime would ignore, since a silently ignored setting is a bug
// waiting to be found.
func validateSections(c *errorsOf, u *Unit) {
	if ts := u.Sim.TimeScale; ts != nil && (*ts < 0 || math.IsNaN(*ts) || math.IsInf(*ts, 0)) {
		c.add("sim.time_scale", "must be a finite number ≥ 0, got %v", *ts)
	}
	if u.CPU.Threads < 0 {
		c.add("cpu.threads", "must be ≥ 0 (0 uses every core), got %d", u.CPU.Threads)
	}
	if kv := u.CPU.KVCacheType; kv != "" && !IsKVCacheType(kv) {
		c.add("cpu.kv_cache_type", "%q is not a cache type: want %s", kv, KVCacheTypeChoices(quoteMarkingDefaultKV))
	}
	if p := u.Vllm.Port; p < 0 || p > 65535 {
		c.add("vllm.port", "invalid port %d (want 1-65535, or 0 to pick one)", p)
	}
	for i, arg := range u.Vllm.Command {
		if arg == "" {
			c.add("vllm.command."+strconv.Itoa(i), "empty argument")
		}
	}
	for k := range u.Vllm.Env {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			c.add("vllm.env", "invalid environment variable name %q", k)
		}
	}
	for section, runtime := range map[string]string{"sim": RuntimeSim, "cpu": RuntimeCPU, "vllm": RuntimeVllm} {
		if c.pos.has(section) && u.Runtime != "" && u.Runtime != runtime {
			c.add(section, "[%s] settings are only used by runtime %s, and this unit's runtime is %s", section, runtime, u.Runtime)
		}
	}
}

// sortErrors orders problems by position so a file's report reads top to
// bottom; problems without a position come first.
func sortErrors(l ErrorList) {
	slices.SortStableFunc(l, func(a, b *Error) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
}

// String describes the unit in one line, for logs.
func (u *Unit) String() string {
	return fmt.Sprintf("%s (%s on %s, %s, %s)", u.Name, u.Model, u.Device, u.Runtime, u.Listen)
}
