// Package change says what an edit of a unit file takes to apply, the way a
// careful operator would: fields that shape the server process restart it,
// fields the running server can take live are sent to it (SIGHUP), fields
// only the daemon uses never touch the server, and comments or formatting
// do nothing at all.
//
// Every field of units.Unit is classified in one table (Rules); a test walks
// the Unit struct by reflection and fails when a field is missing from it,
// so a new field cannot be forgotten. The README's "What an edit does"
// section documents the same table.
package change

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/ttis-dev/ttis/units"
)

// Effect is what a changed field takes to apply. Effects are ordered: an
// edit's effect is the strongest of its fields'.
type Effect int

const (
	// None: nothing to do (the text differs only in comments, formatting
	// or the order of keys).
	None Effect = iota
	// Daemon: only the daemon uses the field (schedules, restart policy,
	// description); the server is not touched.
	Daemon
	// Live: the running server takes the field without a restart: the
	// daemon rewrites its snapshot and sends it SIGHUP.
	Live
	// Restart: the field shapes the server process; it is replaced.
	Restart
	// Lifecycle: the field starts or stops the unit (disabled).
	Lifecycle
)

var effectNames = [...]string{None: "none", Daemon: "daemon", Live: "live", Restart: "restart", Lifecycle: "lifecycle"}

// String returns the effect's name as the API and the README spell it.
func (e Effect) String() string {
	if int(e) < len(effectNames) {
		return effectNames[e]
	}
	return fmt.Sprintf("effect(%d)", int(e))
}

// Rule classifies one field of units.Unit.
type Rule struct {
	// Key is the field's TOML key path ("limits.max_queue"); fields that
	// are not in the file are named by their Go name in parentheses.
	Key    string
	Effect Effect
	// Why explains the class, for the README and reviewers.
	Why string
}

// Rules is the classification of every unit field. A struct field with no
// rule of its own is covered by rules for each of its fields.
var Rules = []Rule{
	{"(Name)", None, "the file name; a renamed file is a new unit"},
	{"(Path)", None, "where the file is; relative paths in it are resolved when it is read"},
	{"(Spec)", Restart, "the catalog entry for (model, device): image, timing of the simulator, defaults"},
	{"description", Daemon, "shown by ttisctl status only"},
	{"model", Restart, "the server loads it"},
	{"device", Restart, "the server opens it"},
	{"catalog", Restart, "selects the catalog entry the server starts from"},
	{"chips", Restart, "the server holds them"},
	{"runtime", Restart, "selects the engine the server runs"},
	{"listen", Restart, "the server's listening socket"},
	{"disabled", Lifecycle, "stops the unit when set, starts it when cleared"},
	{"auth", Restart, "the server's verifier reads the mode and secret at start"},
	{"limits.max_concurrency", Restart, "the engine sizes its batch (and KV cache) by it"},
	{"limits.max_context", Restart, "the engine sizes its context (and KV cache) by it"},
	{"limits.max_queue", Live, "admission reads it per request"},
	{"limits.request_timeout", Live, "each request's deadline is set from it on arrival"},
	{"limits.max_body_bytes", Restart, "fixed in the HTTP server while it serves connections"},
	{"limits.max_inflight_bytes", Restart, "the server sizes its reading budget when it starts"},
	{"limits.write_timeout", Restart, "the server's streams take it from the configuration it started with"},
	{"restart.policy", Daemon, "the supervisor's restart policy"},
	{"restart.delay", Daemon, "the supervisor's back-off"},
	{"restart.max_delay", Daemon, "the supervisor's back-off"},
	{"restart.burst", Daemon, "the supervisor's start limit"},
	{"restart.interval", Daemon, "the supervisor's start limit"},
	{"restart.ready_timeout", Daemon, "the supervisor's readiness stall timeout"},
	{"restart.stop_timeout", Live, "the supervisor's SIGKILL deadline, and the server's drain grace derived from it"},
	{"restart.reset_device", Daemon, "the supervisor resets chips before a restart"},
	{"schedule", Daemon, "the daemon's scheduler runs workflows against the server"},
	{"sim", Restart, "the simulated engine's timing and seed"},
	{"cpu.threads", Restart, "the cpu engine's threads"},
	{"cpu.kv_cache_type", Restart, "the cpu engine allocates and computes its KV cache in this type"},
	{"vllm.command", Restart, "the upstream server's command line"},
	{"vllm.image", Restart, "the container the upstream runs in"},
	{"vllm.port", Restart, "the upstream's listening port"},
	{"vllm.env", Restart, "the upstream's environment"},
	{"vllm.args", Restart, "vLLM's arguments, fixed at its start"},
	{"vllm.weights_dir", Restart, "mounted into the container at its start"},
	{"vllm.cache_dir", Restart, "mounted into the container at its start"},
	{"vllm.stall_timeout", Restart, "the start's stall timeout, read by the server process"},
	{"vllm.override_tt_config", Restart, "tt-metal's settings, fixed when vLLM starts"},
	{"vllm.hf_token_file", Restart, "handed to the container when it starts"},
	{"vllm.trace_capture", Restart, "the container's --disable-trace-capture, and benchmarks' warm-up"},
	{"vllm.host_checks", Daemon, "read before the next start; a running server is not affected"},
	{"api", Restart, "the server's routes (the legacy API) are set when it starts"},
	{"evals", Daemon, "the eval step of releases and scheduled runs; the server never reads it"},
	{"tests", Daemon, "the spec-test step of releases and scheduled runs; the server never reads it"},
	{"media", Restart, "a media model's worker chip groups and upload limits are set when its server starts"},
}

// Field is one changed field and its effect.
type Field struct {
	Key    string
	Effect Effect
}

// Diff is what separates two versions of a unit.
type Diff struct {
	// Fields are the changed fields, in table order; fields of effect None
	// are never listed.
	Fields []Field
	// Effect is the strongest effect among Fields other than Lifecycle
	// (None when nothing changed).
	Effect Effect
}

// Keys lists the changed fields' keys.
func (d Diff) Keys() []string {
	out := make([]string, len(d.Fields))
	for i, f := range d.Fields {
		out[i] = f.Key
	}
	return out
}

// Has reports whether a field of effect e changed.
func (d Diff) Has(e Effect) bool {
	return slices.ContainsFunc(d.Fields, func(f Field) bool { return f.Effect == e })
}

// Between compares two valid versions of a unit field by field.
func Between(old, new *units.Unit) Diff {
	var d Diff
	ov, nv := reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem()
	for _, r := range Rules {
		if r.Effect == None {
			continue
		}
		a, b := lookup(ov, r.Key), lookup(nv, r.Key)
		if equal(a, b) {
			continue
		}
		d.Fields = append(d.Fields, Field{Key: r.Key, Effect: r.Effect})
		if r.Effect != Lifecycle {
			d.Effect = max(d.Effect, r.Effect)
		}
	}
	return d
}

// lookup returns the field of v named by a rule key.
func lookup(v reflect.Value, key string) reflect.Value {
	if goName, ok := strings.CutPrefix(key, "("); ok {
		return v.FieldByName(strings.TrimSuffix(goName, ")"))
	}
	for _, part := range strings.Split(key, ".") {
		i := fieldIndex(v.Type(), part)
		if i < 0 {
			panic("change: rule names no field: " + key)
		}
		v = v.Field(i)
	}
	return v
}

func fieldIndex(t reflect.Type, tag string) int {
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name == tag {
			return i
		}
	}
	return -1
}

// equal is reflect.DeepEqual, except that a nil and an empty slice or map
// are equal at any depth: "env = {}" and no env at all mean the same.
func equal(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if !equal(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
