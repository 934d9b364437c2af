package units

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units/catalog"
)

// matchParts reports whether the parts of want, split at "…", occur in s in
// order.
func matchParts(s, want string) bool {
	for _, part := range strings.Split(want, "…") {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// TestBadFiles checks each fixture in testdata/bad fails with the expected
// messages, in order, each naming line:col and field where the file has
// them.
func TestBadFiles(t *testing.T) {
	want := map[string][]string{
		"api-legacy-route.toml": {"api-legacy-route.toml:8:1: api.legacy_route: \"/v1/completions\" is a path of the OpenAI API"},
		"api-legacy-type.toml":  {"api-legacy-type.toml:7:10: api.legacy: wrong type: got string, want boolean"},
		"bad-cron.toml":         {"bad-cron.toml:8:1: schedule[0].calendar: invalid calendar \"0 2 * * * *\": expected exactly 5 fields"},
		"bad-listen.toml":       {"bad-listen.toml:4:1: listen: \"localhost\" is not host:port"},
		"bad-policy.toml":       {"bad-policy.toml:7:1: restart.policy: unknown policy \"sometimes\""},
		"evals-bad.toml": {
			"evals-bad.toml:7:19: evals.tasks[1]: empty task name",
			"evals-bad.toml:8:1: evals.api: unknown API \"grpc\"",
			"evals-bad.toml:9:12: evals.limits.gsm8k: want a count (a whole number ≥ 1) or a fraction in (0, 1), got 1.5",
			"evals-bad.toml:9:25: evals.limits.ifeval: want a count",
		},
		"tests-bad.toml": {
			"tests-bad.toml:7:1: tests.suite: suite \"image\" tests IMAGE models; Llama-3.1-8B-Instruct is a LLM model",
			"tests-bad.toml:8:17: tests.skip[1]: unknown test \"penalties\" (want one of: liveness, …)",
			"tests-bad.toml:9:1: tests.stability_concurrency: must not be negative, got -1",
		},
		"bad-port.toml":                {"bad-port.toml:4:1: listen: invalid port \"70000\""},
		"bad-runtime.toml":             {"bad-runtime.toml:3:1: runtime: unknown runtime \"tpu\""},
		"broken.toml":                  {"broken.toml:2:9: unexpected character"},
		"chips-count.toml":             {"chips-count.toml:3:1: chips: device t3k has 8 chips, but 2 are listed"},
		"chips-duplicate.toml":         {"chips-duplicate.toml:3:13: chips[1]: chip 3 is listed twice"},
		"cpu-kv-type.toml":             {"cpu-kv-type.toml:7:1: cpu.kv_cache_type: \"q8_0\" is not a cache type: want \"f16\" (the default) or \"f32\""},
		"cpu-missing-model.toml":       {"cpu-missing-model.toml:1:1: model: model file …models/missing.gguf: no such file"},
		"cpu-runtime-on-hardware.toml": {"cpu-runtime-on-hardware.toml:3:1: runtime: runtime cpu needs device = \"cpu\", not \"n150\""},
		"device-unsupported.toml":      {"device-unsupported.toml:2:1: device: model Llama-3.2-1B-Instruct does not support device p150; supported: n150, n300, t3k"},
		"duration-bad.toml":            {"duration-bad.toml:7:16: restart.stop_timeout: invalid duration \"30 seconds\""},
		"duration-no-unit.toml":        {"duration-no-unit.toml:7:1: limits.request_timeout: duration must be a string with a unit"},
		"key-case.toml": {
			"key-case.toml:4:1: MODEL: unknown key: keys are case-sensitive (did you mean model?)",
			"key-case.toml:7:2: Limits: unknown key: keys are case-sensitive (did you mean limits?)",
		},
		// The syntax error on line 3 is found, not hidden behind the
		// duration below a mis-cased table.
		"key-case-syntax.toml": {"key-case-syntax.toml:3:1: expected '=' after key"},
		"inflight-below-body.toml": {
			"inflight-below-body.toml:8:1: limits.max_inflight_bytes: 65536 is less than limits.max_body_bytes (1048576): a request of the largest size could never be read",
		},
		"limits-exceed.toml": {
			"limits-exceed.toml:7:1: limits.max_concurrency: 64 exceeds the catalog's max_concurrency 32",
			"limits-exceed.toml:8:1: limits.max_context: 131072 exceeds the catalog's max_context 40960",
			"limits-exceed.toml:9:1: limits.max_queue: must be positive",
		},
		"many-problems.toml": {
			"many-problems.toml:4:1: listen: invalid port \"0\"",
			"many-problems.toml:7:1: auth.mode: unknown mode \"oauth\"",
			"many-problems.toml:10:1: sim.time_scale: must be a finite number",
			"many-problems.toml:13:1: schedule[0].workflow: unknown workflow \"nightly\"",
			"many-problems.toml:15:1: schedule[0].limit: unknown limit \"huge\"",
			"many-problems.toml:17:2: vllm: [vllm] settings are only used by runtime vllm",
		},
		"missing-required.toml": {
			"missing-required.toml: device: required",
			"missing-required.toml: model: required",
			"missing-required.toml: listen: required",
		},
		"missing-secret.toml": {"missing-secret.toml:8:1: auth.secret_file: secret file …/no-such-secret: no such file"},
		"never-cron.toml":     {"never-cron.toml:8:1: schedule[0].calendar: calendar \"0 0 30 2 *\" never fires"},
		"unknown-device.toml": {"unknown-device.toml:2:1: device: unknown device \"n3000\" (did you mean n300"},
		"unknown-key.toml":    {"unknown-key.toml:7:1: limits.max_conc: unknown key (known: max_concurrency, max_context, max_queue, request_timeout, max_body_bytes, max_inflight_bytes, write_timeout)"},
		"unknown-model.toml":  {"unknown-model.toml:1:1: model: unknown model \"Llama-3.1-8B-Instruc\" (did you mean Llama-3.1-8B-Instruct"},
		"vllm-no-chips.toml":  {"vllm-no-chips.toml: chips: required for runtime vllm on device n150"},
		"wrong-type.toml":     {"wrong-type.toml:5:9: chips: wrong type: got string, want array of integers"},
	}
	files, err := filepath.Glob("testdata/bad/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("testdata/bad has %d files, the table %d", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			exp, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			u, err := Load(f)
			if err == nil {
				t.Fatalf("loaded %+v, want errors", u)
			}
			list := Errors(err)
			if len(list) != len(exp) {
				t.Errorf("got %d errors, want %d:\n%v", len(list), len(exp), err)
			}
			for i, w := range exp {
				if i < len(list) && !matchParts(list[i].Error(), w) {
					t.Errorf("error %d is\n\t%s\nwant\n\t%s", i, list[i], w)
				}
			}
			for _, e := range list {
				if e.File != f {
					t.Errorf("error file %q, want %q", e.File, f)
				}
			}
		})
	}
}

func TestGoodFiles(t *testing.T) {
	set, err := LoadDir("testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	if errs := set.Errors(); len(errs) > 0 {
		t.Fatalf("good units failed:\n%v", errs)
	}
	var names []string
	for _, u := range set.Units() {
		names = append(names, u.Name)
	}
	want := []string{"cpu-tiny", "sim-legacy-api", "sim-llama", "sim-qwen-galaxy", "vllm-n300", "vllm-p150x4"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("units %v, want %v", names, want)
	}
	for _, u := range set.Units() {
		if u.Name == "cpu-tiny" && (u.CPU.KVCacheType != "f32" || u.CPU.Threads != 2) {
			t.Errorf("cpu-tiny [cpu] read as %+v, want threads 2 and kv_cache_type f32", u.CPU)
		}
	}
	for _, f := range set.Files {
		if len(f.Hash) != 64 || len(f.Data) == 0 {
			t.Errorf("%s: hash %q, %d bytes", f.Name, f.Hash, len(f.Data))
		}
	}
}

func TestDefaults(t *testing.T) {
	abs, err := filepath.Abs("testdata/files/model.gguf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		want func(u *Unit) []string
	}{
		{"testdata/good/cpu-tiny.toml", func(u *Unit) []string {
			return check(
				u.Runtime == RuntimeCPU, "runtime cpu",
				u.Model == abs, "model resolved to "+abs,
				u.Limits.MaxConcurrency == 8 && u.Limits.MaxContext == 0, "cpu limits 8/0",
				u.Limits.MaxQueue == 32, "max_queue 4×8",
				u.Limits.RequestTimeout.Duration == 10*time.Minute, "request_timeout 10m",
				u.Limits.MaxBodyBytes == 8<<20, "max_body_bytes 8 MiB",
				u.Limits.MaxInflightBytes == 16<<20, "max_inflight_bytes 2 × max_body_bytes",
				u.Restart.ReadyTimeout.Duration == 2*time.Minute, "ready_timeout 2m",
				u.Restart.Policy == RestartOnFailure && u.Restart.Burst == 5, "restart defaults",
				u.Restart.Delay.Duration == time.Second && u.Restart.MaxDelay.Duration == time.Minute, "delays",
				u.Restart.Interval.Duration == 10*time.Minute && u.Restart.StopTimeout.Duration == 30*time.Second, "interval/stop",
				u.Auth.Mode == AuthNone, "auth none",
				u.Spec == nil, "no catalog spec",
			)
		}},
		{"testdata/good/sim-llama.toml", func(u *Unit) []string {
			return check(
				u.Limits.MaxConcurrency == 32 && u.Limits.MaxContext == 131072, "catalog limits",
				u.Limits.MaxQueue == 128, "max_queue 4×32",
				u.Spec != nil && u.Spec.ModelName == "Llama-3.1-8B-Instruct", "spec",
				u.Schedule[0].Limit == "smoke" && u.Schedule[1].Limit == "ci-nightly", "schedule limits",
				*u.Sim.TimeScale == 0.5, "time scale",
				slices.Equal(u.Tests.Skip, []string{"context_full"}) && u.Tests.StabilityDuration.Duration == 2*time.Minute &&
					u.Tests.StabilityConcurrency == 8, "tests",
			)
		}},
		{"testdata/good/vllm-n300.toml", func(u *Unit) []string {
			return check(
				u.Runtime == RuntimeVllm, "runtime vllm by default on hardware",
				u.Limits.MaxConcurrency == 16 && u.Limits.MaxQueue == 64, "explicit limits kept",
				u.Restart.ReadyTimeout.Duration == 10*time.Minute, "vllm ready_timeout 10m",
				u.Restart.Delay.Duration == 5*time.Second, "delay 5s",
			)
		}},
		{"testdata/good/vllm-p150x4.toml", func(u *Unit) []string {
			return check(u.Device == "p150x4", "device name lower-cased", u.Limits.MaxConcurrency == 128, "p150x4 conc 128")
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			u, err := Load(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.want(u) {
				t.Error("want " + f)
			}
		})
	}
}

// check takes (condition, description) pairs and returns the descriptions
// of the false ones.
func check(pairs ...any) []string {
	var failed []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if !pairs[i].(bool) {
			failed = append(failed, pairs[i+1].(string))
		}
	}
	return failed
}

// TestSecretFile generates its fixtures because git does not keep modes.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	unit := func(secret string) []byte {
		return []byte("model = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n\n[auth]\nmode = \"jwt\"\nsecret_file = \"" + secret + "\"\n")
	}
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := write("private", 0o600)
	write("world", 0o644)
	write("group", 0o640)
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		secret, want string
	}{
		{"private", ""},
		{private, ""},
		{"world", "auth.secret_file: secret file " + filepath.Join(dir, "world") + " has mode 0644"},
		{"group", "has mode 0640; it must not be readable or writable by group or others"},
		{"adir", "is not a regular file"},
		{"nope", "no such file or directory"},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, "u.toml")
		u, err := Parse("u", path, unit(tt.secret))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.secret, err)
			} else if u.Auth.SecretFile != private {
				t.Errorf("secret file %q, want %q", u.Auth.SecretFile, private)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.secret, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "u.toml:8:1: ") {
			t.Errorf("%s: error lacks the position of secret_file: %v", tt.secret, err)
		}
	}
}

func TestParseMissingFileAndFolder(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "none.toml")); err == nil || !strings.Contains(err.Error(), "none.toml: read unit file: no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: %v", err)
	}
	var list ErrorList
	if _, err := Load(dir); !errors.As(err, &list) {
		t.Errorf("error %T is not an ErrorList", err)
	}
}

func TestUnitName(t *testing.T) {
	doc := []byte("model = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n")
	if _, err := Parse("ok-name_1.x@2", "x.toml", doc); err != nil {
		t.Errorf("good name: %v", err)
	}
	for _, bad := range []string{"", "-x", "a b", "a/b"} {
		if _, err := Parse(bad, "x.toml", doc); err == nil || !strings.Contains(err.Error(), "unit name") {
			t.Errorf("name %q: %v", bad, err)
		}
	}
}

func TestCalendar(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		spec, zone string
		next       time.Time
		err        string
	}{
		{spec: "0 2 * * *", next: time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)},
		{spec: "@daily", next: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)},
		{spec: "0 2 * * *", zone: "Europe/Berlin", next: time.Date(2026, 3, 2, 1, 0, 0, 0, time.UTC)},
		{spec: "0 2 31 2 *", err: "never fires"},
		{spec: "CRON_TZ=UTC 0 2 * * *", err: "timezone key"},
		{spec: "61 * * * *", err: "invalid calendar"},
		{spec: "", err: "empty"},
		{spec: "0 2 * * *", zone: "Mars/Olympus", err: "unknown timezone"},
	}
	for _, tt := range tests {
		s, err := parseCalendar(tt.spec, tt.zone, now)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: got %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.spec, err)
			continue
		}
		if got := s.Next(now); !got.Equal(tt.next) {
			t.Errorf("%q in %q: next %v, want %v", tt.spec, tt.zone, got, tt.next)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "a.toml", Line: 3, Col: 5, Field: "limits.max_queue", Msg: "bad"}
	if got := e.Error(); got != "a.toml:3:5: limits.max_queue: bad" {
		t.Errorf("got %q", got)
	}
	e = &Error{File: "a.toml", Field: "model", Msg: "required"}
	if got := e.Error(); got != "a.toml: model: required" {
		t.Errorf("got %q", got)
	}
	l := ErrorList{{File: "a", Msg: "x"}, {File: "b", Msg: "y"}}
	if got := l.Error(); got != "a: x\nb: y" {
		t.Errorf("got %q", got)
	}
	var target *Error
	if !errors.As(error(l), &target) || target.File != "a" {
		t.Errorf("errors.As over list: %v", target)
	}
}

func TestDurationPaths(t *testing.T) {
	got := durationPaths()
	sort.Strings(got)
	for _, want := range []string{"limits.request_timeout", "restart.delay", "restart.interval", "restart.max_delay", "restart.ready_timeout", "restart.stop_timeout"} {
		if i := sort.SearchStrings(got, want); i == len(got) || got[i] != want {
			t.Errorf("durationPaths lacks %s: %v", want, got)
		}
	}
}

func TestUnknownKeySuggestions(t *testing.T) {
	doc := "modle = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n[restart]\npolicyy = \"no\"\n[[schedule]]\nworkflow = \"evals\"\ncalender = \"@daily\"\n[sim]\nvelocity = 2\n"
	_, err := Parse("u", "u.toml", []byte(doc))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"u.toml:1:1: modle: unknown key (did you mean model?)",
		"u.toml:6:1: restart.policyy: unknown key (did you mean policy?)",
		"u.toml:9:1: schedule.calender: unknown key (did you mean calendar?)",
		"u.toml:11:1: sim.velocity: unknown key (known: time_scale, seed)",
		// Validation still runs on what was decoded.
		"u.toml: model: required",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lacks %q:\n%v", want, err)
		}
	}
}

// TestDesignExample loads the unit file of DESIGN.md (with its secret file
// made here, and both chips of the n300 listed).
func TestDesignExample(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "jwt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `# /etc/ttis/units/llama-8b.toml   (unit name = file name)
description = "Llama 3.1 8B Instruct for the chat team"
model   = "Llama-3.1-8B-Instruct"     # a catalog model name, or a path to a local model file
device  = "n300"                      # n150 n300 t3k galaxy p100 p150 p150x4 p300 … cpu
chips   = [0, 1]                      # /dev/tenstorrent/N claimed exclusively by this unit
runtime = "vllm"                      # vllm | cpu | sim (default from catalog and device)
listen  = "127.0.0.1:8000"

[auth]                                # none | api-key | jwt (HS256); secrets from files, never inline
mode = "jwt"
secret_file = "` + secret + `"

[limits]                              # defaults come from the catalog entry for (model, device)
max_concurrency = 32
max_context = 131072
max_queue = 64
request_timeout = "10m"

[restart]                             # systemd semantics
policy = "on-failure"                 # no | on-failure | always
delay = "5s"
burst = 5
interval = "10m"

[[schedule]]
workflow = "release"                  # benchmarks | evals | release
calendar = "0 2 * * *"                # cron (5 fields); reject specs that can never fire
limit = "ci-nightly"                  # smoke | ci-commit | ci-nightly | full
`
	u, err := Parse("llama-8b", filepath.Join(dir, "llama-8b.toml"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if u.Auth.SecretFile != secret || u.Restart.Delay.Duration != 5*time.Second || u.Schedule[0].Workflow != "release" {
		t.Errorf("%+v", u)
	}
	// The illustrative chips = [0] names one of the n300's two chips.
	_, err = Parse("llama-8b", filepath.Join(dir, "llama-8b.toml"), []byte(strings.Replace(doc, "[0, 1]", "[0]   ", 1)))
	if err == nil || !strings.Contains(err.Error(), "llama-8b.toml:5:1: chips: device n300 has 2 chips, but 1 is listed") {
		t.Errorf("one chip on n300: %v", err)
	}
}

func TestLegacyAPIRoute(t *testing.T) {
	base := "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8300\"\n"
	u, err := Parse("falcon", "falcon.toml", []byte(base+"[api]\nlegacy = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u.API.LegacyRoute != "/inference/falcon" {
		t.Errorf("default route %q", u.API.LegacyRoute)
	}
	for text, want := range map[string]string{
		"[api]\nlegacy_route = \"/inference/x\"\n":             "falcon.toml:6:1: api.legacy_route: is set but api.legacy is false",
		"[api]\nlegacy = true\nlegacy_route = \"inference\"\n": "falcon.toml:7:1: api.legacy_route: \"inference\" is not a URL path",
		"[api]\nlegacy = true\nlegacy_route = \"/health\"\n":   "is a path of the OpenAI API",
		"[api]\nlegacy = true\nlegacy_routes = \"/x\"\n":       "falcon.toml:7:1: api.legacy_routes: unknown key (did you mean legacy_route?)",
	} {
		_, err := Parse("falcon", "falcon.toml", []byte(base+text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}

// A jwt unit's tokens must expire within max_token_lifetime (default a
// day) unless allow_no_expiry opts out; both keys belong to jwt alone.
func TestAuthTokenLifetime(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unit := func(mode, extra string) []byte {
		return []byte("model = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n\n[auth]\nmode = \"" + mode + "\"\nsecret_file = \"" + secret + "\"\n" + extra)
	}
	path := filepath.Join(dir, "u.toml")
	u, err := Parse("u", path, unit("jwt", ""))
	if err != nil || u.Auth.MaxTokenLifetime.Duration != DefaultMaxTokenLifetime || u.Auth.AllowNoExpiry {
		t.Fatalf("default jwt unit: %+v, %v", u, err)
	}
	u, err = Parse("u", path, unit("jwt", "max_token_lifetime = \"8h\"\nallow_no_expiry = true\n"))
	if err != nil || u.Auth.MaxTokenLifetime.Duration != 8*time.Hour || !u.Auth.AllowNoExpiry {
		t.Fatalf("explicit jwt unit: %+v, %v", u, err)
	}
	for _, tt := range []struct{ mode, extra, want string }{
		{"jwt", "max_token_lifetime = \"-1h\"\n", "auth.max_token_lifetime: negative duration"},
		{"jwt", "max_token_lifetime = \"1ms\"\n", "u.toml:9:1: auth.max_token_lifetime: 1ms is shorter than a second"},
		{"api-key", "max_token_lifetime = \"1h\"\n", "u.toml:9:1: auth.max_token_lifetime: only used with mode \"jwt\""},
		{"api-key", "allow_no_expiry = true\n", "u.toml:9:1: auth.allow_no_expiry: only used with mode \"jwt\""},
	} {
		if _, err := Parse("u", path, unit(tt.mode, tt.extra)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: %v, want %q", tt.mode, tt.extra, err, tt.want)
		}
	}
}

func TestCatalogModeAndAutoDevice(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	devText := "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\ncatalog = \"dev\"\nchips = [0]\nlisten = \"127.0.0.1:8000\"\n"
	noImage := write("noimage.toml", devText)
	if _, err := Load(noImage); err == nil || !strings.Contains(err.Error(), "noimage.toml:3:1: catalog: the dev catalog pins no image") {
		t.Errorf("dev unit without an image: %v", err)
	}
	dev := write("dev.toml", devText+"[vllm]\nimage = \"ghcr.io/example/vllm-tt-metal:dev\"\n")
	u, err := Load(dev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalog.LookupIn(catalog.ModeDev, "Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Fatal(err)
	}
	if u.Spec == nil || u.Spec.ModelID != want.ModelID || u.Spec.Version != want.Version {
		t.Errorf("dev unit spec = %+v", u.Spec)
	}
	bad := write("bad.toml", "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\ncatalog = \"beta\"\nchips = [0]\nlisten = \"127.0.0.1:8000\"\n")
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), `bad.toml:3:1: catalog: unknown catalog "beta"`) {
		t.Errorf("bad catalog: %v", err)
	}
	auto := write("auto.toml", "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"auto\"\nchips = [0, 1]\nlisten = \"127.0.0.1:8000\"\n")
	u, err = Load(auto)
	if err != nil {
		t.Fatalf("auto without detection: %v", err)
	}
	if u.Device != DeviceAuto || u.Runtime != RuntimeVllm || u.Spec != nil {
		t.Errorf("auto unit before detection: %s %s %v", u.Device, u.Runtime, u.Spec)
	}
	u, err = LoadWith(auto, Options{DetectDevice: func() (string, error) { return "n300", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if u.Device != "n300" || u.Spec == nil || u.Spec.Device != "n300" {
		t.Errorf("auto unit after detection: %s %v", u.Device, u.Spec)
	}
	_, err = LoadWith(auto, Options{DetectDevice: func() (string, error) { return "", errors.New("tt-smi is not installed") }})
	if err == nil || !strings.Contains(err.Error(), `auto.toml:2:1: device: device = "auto": tt-smi is not installed`) {
		t.Errorf("failed detection: %v", err)
	}
}
