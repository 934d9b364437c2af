package change

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units"
)

// Every field of units.Unit must be classified: a rule for the field, or
// rules for every field of a struct it holds. A field added to Unit without
// a rule fails here, naming the field.
func TestEveryUnitFieldIsClassified(t *testing.T) {
	keys := map[string]bool{}
	for _, r := range Rules {
		if keys[r.Key] {
			t.Errorf("rule %q appears twice", r.Key)
		}
		keys[r.Key] = true
	}
	used := map[string]bool{}
	var walk func(tp reflect.Type, prefix string)
	walk = func(tp reflect.Type, prefix string) {
		for i := range tp.NumField() {
			f := tp.Field(i)
			if !f.IsExported() {
				// Unexported state (key positions) is how the text is
				// written, never what it means.
				continue
			}
			key := "(" + f.Name + ")"
			if tag, _, _ := strings.Cut(f.Tag.Get("toml"), ","); tag != "" && tag != "-" {
				key = prefix + tag
			}
			if keys[key] {
				used[key] = true
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[units.Duration]() && !strings.HasPrefix(key, "(") {
				walk(ft, key+".")
				continue
			}
			t.Errorf("unit field %s (%s.%s) has no rule in change.Rules: add one saying whether changing it restarts the server, is applied live, or only concerns the daemon", key, tp.Name(), f.Name)
		}
	}
	walk(reflect.TypeFor[units.Unit](), "")
	for k := range keys {
		if !used[k] {
			t.Errorf("rule %q names no field of units.Unit", k)
		}
	}
}

const base = `model = "Llama-3.1-8B-Instruct"
device = "n150"
runtime = "sim"
listen = "127.0.0.1:8000"
description = "one"

[limits]
max_queue = 8

[restart]
stop_timeout = "30s"
`

func parse(t *testing.T, text string) *units.Unit {
	t.Helper()
	u, err := units.Parse("a", "/etc/ttis/units/a.toml", []byte(text))
	if err != nil {
		t.Fatalf("parse:\n%s\n%v", text, err)
	}
	return u
}

func TestBetween(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(string) string
		effect Effect
		keys   []string
	}{
		{"identical", func(s string) string { return s }, None, nil},
		{"comment and blank lines", func(s string) string { return "# managed by config tool\n\n" + s + "\n# end\n" }, None, nil},
		{"key order and spacing", func(s string) string {
			return strings.Replace(s, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"", "device   =   \"n150\"\nmodel = \"Llama-3.1-8B-Instruct\"", 1)
		}, None, nil},
		{"description", func(s string) string { return strings.Replace(s, `"one"`, `"two"`, 1) }, Daemon, []string{"description"}},
		{"schedule added", func(s string) string {
			return s + "\n[[schedule]]\nworkflow = \"benchmarks\"\ncalendar = \"0 3 * * *\"\nlimit = \"smoke\"\n"
		}, Daemon, []string{"schedule"}},
		{"restart policy", func(s string) string { return s + "policy = \"always\"\n" }, Daemon, []string{"restart.policy"}},
		{"max_queue", func(s string) string { return strings.Replace(s, "max_queue = 8", "max_queue = 9", 1) }, Live, []string{"limits.max_queue"}},
		{"request_timeout", func(s string) string {
			return strings.Replace(s, "max_queue = 8", "max_queue = 8\nrequest_timeout = \"1m\"", 1)
		}, Live, []string{"limits.request_timeout"}},
		{"stop_timeout", func(s string) string { return strings.Replace(s, `"30s"`, `"20s"`, 1) }, Live, []string{"restart.stop_timeout"}},
		{"live and daemon", func(s string) string {
			return strings.Replace(strings.Replace(s, "max_queue = 8", "max_queue = 1", 1), `"one"`, `"two"`, 1)
		}, Live, []string{"description", "limits.max_queue"}},
		{"listen", func(s string) string { return strings.Replace(s, ":8000", ":8001", 1) }, Restart, []string{"listen"}},
		{"model", func(s string) string { return strings.Replace(s, "Llama-3.1-8B-Instruct", "Llama-3.2-1B-Instruct", 1) }, Restart, []string{"(Spec)", "model", "limits.max_context"}},
		{"max_concurrency", func(s string) string {
			return strings.Replace(s, "max_queue = 8", "max_queue = 8\nmax_concurrency = 3", 1)
		}, Restart, []string{"limits.max_concurrency"}},
		{"sim seed", func(s string) string { return s + "[sim]\nseed = 4\n" }, Restart, []string{"sim"}},
		{"empty sim table", func(s string) string { return s + "[sim]\n" }, None, nil},
		{"disabled", func(s string) string { return "disabled = true\n" + s }, None, []string{"disabled"}},
		{"disabled and listen", func(s string) string { return "disabled = true\n" + strings.Replace(s, ":8000", ":8001", 1) }, Restart, []string{"listen", "disabled"}},
	}
	old := parse(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Between(old, parse(t, tt.edit(base)))
			if d.Effect != tt.effect || !slices.Equal(d.Keys(), tt.keys) {
				t.Fatalf("Between = %v %v, want %v %v", d.Effect, d.Keys(), tt.effect, tt.keys)
			}
		})
	}
}

// The unit's file location is not a change: the daemon compares a unit
// read from its state folder with the one in the units folder.
func TestBetweenIgnoresPath(t *testing.T) {
	a := parse(t, base)
	b, err := units.Parse("a", "/var/lib/ttis/unit-snapshots/a.toml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if d := Between(a, b); d.Effect != None || len(d.Fields) != 0 {
		t.Fatalf("Between = %+v", d)
	}
	b.Restart.StopTimeout.Duration = time.Minute
	if d := Between(a, b); d.Effect != Live || !d.Has(Live) || d.Has(Restart) {
		t.Fatalf("Between = %+v", d)
	}
}

func TestEmptyEqualsNil(t *testing.T) {
	a, b := units.Vllm{}, units.Vllm{Env: map[string]string{}, Command: []string{}}
	if !equal(reflect.ValueOf(a), reflect.ValueOf(b)) {
		t.Fatal("an empty table differs from none")
	}
	b.Env["X"] = "1"
	if equal(reflect.ValueOf(a), reflect.ValueOf(b)) {
		t.Fatal("an env entry is no change")
	}
}

func TestEffectNames(t *testing.T) {
	for e := None; e <= Lifecycle; e++ {
		if strings.HasPrefix(e.String(), "effect(") {
			t.Errorf("effect %d has no name", e)
		}
	}
}

// The README's table says what Rules says, row for row.
func TestReadmeTable(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## What an edit does\n")
	if !ok {
		t.Fatal("README has no \"What an edit does\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	var want []string
	for _, r := range Rules {
		want = append(want, "| `"+r.Key+"` | "+r.Effect.String()+" | "+r.Why+" |")
	}
	if !slices.Equal(rows, want) {
		t.Errorf("README table differs from change.Rules; its rows should be:\n%s", strings.Join(want, "\n"))
	}
}
