package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units"
)

// file reads text as the unit file name.toml would be.
func file(t *testing.T, name, text string) *units.File {
	t.Helper()
	sum := sha256.Sum256([]byte(text))
	f := &units.File{Name: name, Path: "/u/" + name + ".toml", Data: []byte(text), Hash: hex.EncodeToString(sum[:])}
	u, err := units.Parse(name, f.Path, f.Data)
	if err != nil {
		f.Err = units.Errors(err)
	} else {
		f.Unit = u
	}
	return f
}

// running is what the reconciler holds after running f.
func running(f *units.File) Current { return Current{Good: f.Unit, Hash: f.Hash, Supervised: true} }

func sim(port int, extra string) string {
	return fmt.Sprintf("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:%d\"\n%s", port, extra)
}

// show renders a plan as "kind name [fields]" lines.
func show(acts []Action) []string {
	var out []string
	for _, a := range acts {
		s := a.Kind.String() + " " + a.Name
		if keys := a.Diff.Keys(); len(keys) > 0 {
			s += " [" + strings.Join(keys, " ") + "]"
		}
		out = append(out, s)
	}
	return out
}

func TestPlan(t *testing.T) {
	a1 := file(t, "a", sim(9001, ""))
	b1 := file(t, "b", sim(9002, ""))
	broken := file(t, "a", sim(9001, "bogus = 1\n"))
	disabledA := file(t, "a", "disabled = true\n"+sim(9001, ""))
	restored := Current{Good: a1.Unit} // from the state folder: no hash, no server
	tests := []struct {
		name string
		cur  map[string]Current
		now  []*units.File
		want []string
	}{
		{"empty", nil, nil, nil},
		{"new units start", nil, []*units.File{a1, b1}, []string{"start a", "start b"}},
		{"unchanged", map[string]Current{"a": running(a1)}, []*units.File{a1}, nil},
		{"comment only", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", "# hi\n"+sim(9001, ""))}, []string{"keep a"}},
		{"description", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9001, "description = \"x\"\n"))}, []string{"retune a [description]"}},
		{"schedule", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9001, "[[schedule]]\nworkflow = \"evals\"\ncalendar = \"0 1 * * *\"\nlimit = \"smoke\"\n"))}, []string{"retune a [schedule]"}},
		{"restart policy", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9001, "[restart]\nburst = 9\n"))}, []string{"retune a [restart.burst]"}},
		{"max_queue", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9001, "[limits]\nmax_queue = 3\n"))}, []string{"reload a [limits.max_queue]"}},
		{"live and daemon", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9001, "description = \"y\"\n[limits]\nrequest_timeout = \"5s\"\n"))}, []string{"reload a [description limits.request_timeout]"}},
		{"listen", map[string]Current{"a": running(a1)}, []*units.File{file(t, "a", sim(9009, ""))}, []string{"restart a [listen]"}},
		{"broken keeps running", map[string]Current{"a": running(a1)}, []*units.File{broken}, []string{"invalid a"}},
		{"broken, never valid", nil, []*units.File{broken}, []string{"invalid a"}},
		{"broken at startup runs the last good", map[string]Current{"a": restored}, []*units.File{broken}, []string{"invalid a", "start a"}},
		{"restored, unchanged file", map[string]Current{"a": restored}, []*units.File{a1}, []string{"start a"}},
		{"adopted, unchanged file", map[string]Current{"a": {Good: a1.Unit, Supervised: true}}, []*units.File{a1}, []string{"keep a"}},
		{"adopted, live edit", map[string]Current{"a": {Good: a1.Unit, Supervised: true}}, []*units.File{file(t, "a", sim(9001, "[limits]\nmax_queue = 3\n"))}, []string{"reload a [limits.max_queue]"}},
		{"disable", map[string]Current{"a": running(a1)}, []*units.File{disabledA}, []string{"stop a [disabled]"}},
		{"disabled from the start", nil, []*units.File{disabledA}, []string{"keep a"}},
		{"disabled, edited", map[string]Current{"a": {Good: disabledA.Unit, Hash: disabledA.Hash}}, []*units.File{file(t, "a", "disabled = true\n"+sim(9005, ""))}, []string{"keep a [listen]"}},
		{"enable again", map[string]Current{"a": {Good: disabledA.Unit, Hash: disabledA.Hash, Supervised: true}}, []*units.File{a1}, []string{"start a [disabled]"}},
		{"removed first, then the rest by name", map[string]Current{"z": running(file(t, "z", sim(9003, ""))), "a": running(a1)},
			[]*units.File{file(t, "a", sim(9001, "description = \"d\"\n")), b1}, []string{"remove z", "retune a [description]", "start b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := show(Plan(tt.cur, tt.now))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("plan\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A file put back to the running text after a broken edit is planned (a
// keep, which clears the error), not skipped as unchanged: the soak found
// the error shown for good after such a fix.
func TestPlanFixBackToRunningText(t *testing.T) {
	f := file(t, "a", sim(8000, ""))
	cur := running(f)
	if acts := Plan(map[string]Current{"a": cur}, []*units.File{f}); len(acts) != 0 {
		t.Fatalf("unchanged file planned %v", show(acts))
	}
	cur.Broken = true
	acts := Plan(map[string]Current{"a": cur}, []*units.File{f})
	if got := strings.Join(show(acts), "; "); got != "keep a" {
		t.Fatalf("file put back while broken: %q, want keep a", got)
	}
}
