package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/units"
)

func TestSnapshotMakesPathsAbsolute(t *testing.T) {
	dir := t.TempDir()
	data := []byte("model = \"models/tiny.gguf\"\ndevice = \"cpu\"\nlisten = \"127.0.0.1:1\"\n[auth]\nmode = \"api-key\"\nsecret_file = \"key\"\n[limits]\nmax_queue = 3\n")
	u := &units.Unit{Name: "c", Path: "/etc/ttis/units/c.toml", Model: "models/tiny.gguf", Runtime: units.RuntimeCPU,
		Auth: units.Auth{Mode: "api-key", SecretFile: "key"}}
	path, err := writeSnapshot(dir, u, data)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "c.toml") {
		t.Fatalf("path %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model  string
		Device string
		Auth   struct {
			Mode       string
			SecretFile string `toml:"secret_file"`
		}
		Limits struct {
			MaxQueue int `toml:"max_queue"`
		}
	}
	if err := toml.Unmarshal(b, &got); err != nil {
		t.Fatalf("snapshot is not TOML: %v\n%s", err, b)
	}
	if got.Model != "/etc/ttis/units/models/tiny.gguf" || got.Auth.SecretFile != "/etc/ttis/units/key" ||
		got.Device != "cpu" || got.Auth.Mode != "api-key" || got.Limits.MaxQueue != 3 {
		t.Fatalf("snapshot %+v", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v %v", fi.Mode(), err)
	}
}

func TestSnapshotCopiesVerbatim(t *testing.T) {
	data := []byte("# a comment survives\nmodel = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\n")
	u := &units.Unit{Name: "s", Path: "/u/s.toml", Model: "Llama-3.1-8B-Instruct", Runtime: units.RuntimeSim}
	path, err := writeSnapshot(t.TempDir(), u, data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, data) {
		t.Fatalf("snapshot changed a unit without relative paths:\n%s", b)
	}
}

// snapshotNames lists the snapshot folder beside the fixture's units.
func (f *fixture) snapshotNames() []string {
	f.t.Helper()
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(f.dir), "snap"))
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Units created then deleted leave no snapshot behind (issue 31: 960 of
// 1,000 stayed, and every start loaded and logged them), whether they ran
// or were disabled and never did.
func TestDeletedUnitsLeaveNoSnapshots(t *testing.T) {
	f := newFixture(t)
	const n = 1000
	for i := range n {
		extra := ""
		if i%4 == 0 {
			extra = "disabled = true\n"
		}
		f.write(fmt.Sprintf("u%04d", i), unitText(20000+i, extra))
	}
	if res := f.reconcile(); len(res.Errors) != 0 || len(res.Started) != n*3/4 {
		t.Fatalf("first pass: %d started, errors %v", len(res.Started), res.Errors)
	}
	if got := len(f.snapshotNames()); got != n {
		t.Fatalf("%d snapshots, want %d", got, n)
	}
	for i := range n {
		if err := os.Remove(filepath.Join(f.dir, fmt.Sprintf("u%04d.toml", i))); err != nil {
			t.Fatal(err)
		}
	}
	if res := f.reconcile(); len(res.Stopped) != n {
		t.Fatalf("second pass stopped %d units, want %d", len(res.Stopped), n)
	}
	if names := f.snapshotNames(); len(names) != 0 {
		t.Fatalf("%d snapshots left, first %s", len(names), names[0])
	}
}

// At start, the snapshots of units whose file is gone are pruned (those
// restored, and those this daemon cannot use), and so are temporary files
// a crash left; a unit whose file broke while no daemon ran keeps its
// snapshot and runs it.
func TestStaleSnapshotsPrunedAtStart(t *testing.T) {
	f := newFixture(t)
	f.write("gone", unitText(18101, ""))
	f.write("off", unitText(18102, "disabled = true\n"))
	f.write("broken", unitText(18103, "description = \"good\"\n"))
	f.write("kept", unitText(18104, ""))
	f.reconcile()
	f.waitActive("broken")
	snap := filepath.Join(filepath.Dir(f.dir), "snap")
	for name, text := range map[string]string{"unusable.toml": "not toml [", ".kept.toml123456": "half"} {
		if err := os.WriteFile(filepath.Join(snap, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// While no daemon runs: two files deleted, one broken.
	for _, name := range []string{"gone", "off"} {
		if err := os.Remove(filepath.Join(f.dir, name+".toml")); err != nil {
			t.Fatal(err)
		}
	}
	f.write("broken", unitText(18103, "bogus = 1\n"))

	r, st := newReconciler(t, f.dir, nil)
	r.Restore(context.Background(), nil)
	r.Reconcile(context.Background())
	g := &fixture{t: t, dir: f.dir, starter: st, r: r}
	if got := strings.Join(g.snapshotNames(), " "); got != "broken.toml kept.toml" {
		t.Errorf("snapshots after the first pass: %s, want broken.toml kept.toml", got)
	}
	if d := g.waitActive("broken"); d.Description != "good" || d.LoadState != api.LoadStale {
		t.Errorf("broken unit does not run its last good version: %+v", d)
	}
	for _, name := range []string{"gone", "off", "unusable"} {
		if _, err := r.Unit(name, 0); err == nil {
			t.Errorf("unit %s still known", name)
		}
	}
}
