package units

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func simUnit(listen string, chips string) string {
	s := "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n300\"\nruntime = \"sim\"\nlisten = \"" + listen + "\"\n"
	if chips != "" {
		s += "chips = " + chips + "\n"
	}
	return s
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadDirConflicts(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.toml": simUnit("127.0.0.1:8000", "[0, 1]"),
		// b takes chip 1 from a and a's port: reported on b, the later name.
		"b.toml": simUnit("localhost:8000", "[1, 2]"),
		// c binds every interface on a's port.
		"c.toml": simUnit(":8000", "[4, 5]"),
		// d reuses b's chip 2; b lost, so the chip is free.
		"d.toml": simUnit("127.0.0.1:8003", "[2, 3]"),
		// e is disabled: it claims nothing and conflicts with nothing.
		"e.toml":       simUnit("127.0.0.1:8000", "[0, 1]") + "disabled = true\n",
		"broken.toml":  "model = \n",
		".hidden.toml": simUnit("127.0.0.1:8000", "[0, 1]"),
		"notes.txt":    "not a unit",
	})
	set, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range set.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,broken,c,d,e" {
		t.Fatalf("files %s", got)
	}
	good := map[string]bool{}
	for _, u := range set.Units() {
		good[u.Name] = true
	}
	for name, want := range map[string]bool{"a": true, "b": false, "broken": false, "c": false, "d": true, "e": true} {
		if good[name] != want {
			t.Errorf("unit %s valid = %v, want %v (%v)", name, good[name], want, set.File(name).Err)
		}
	}
	b := set.File("b").Err.Error()
	for _, want := range []string{
		"b.toml:5:10: chips[0]: chip 1 already claimed by unit a",
		"b.toml:4:1: listen: address localhost:8000 already used by unit a",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("b's errors lack %q:\n%s", want, b)
		}
	}
	if c := set.File("c").Err.Error(); !strings.Contains(c, "listen: address :8000 already used by unit a") {
		t.Errorf("c: %s", c)
	}
	if got := set.File("broken").Err.Error(); !strings.Contains(got, "broken.toml:1:9:") {
		t.Errorf("broken: %s", got)
	}
}

func TestCheckConflictsHeld(t *testing.T) {
	dir := t.TempDir()
	load := func(name, body string) *Unit {
		t.Helper()
		u, err := Parse(name, filepath.Join(dir, name+".toml"), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	running := load("z", simUnit("127.0.0.1:9000", "[0, 1]"))
	// a sorts before z, but z already runs: a must not evict it.
	newcomer := load("a", simUnit("127.0.0.1:9001", "[1, 2]"))
	got := CheckConflicts([]*Unit{newcomer, running}, []*Unit{running})
	if len(got["z"]) != 0 {
		t.Errorf("running unit z got errors: %v", got["z"])
	}
	if !strings.Contains(got["a"].Error(), "chip 1 already claimed by unit z") {
		t.Errorf("a: %v", got["a"])
	}
	// An edit of z itself replaces the held version: no self-conflict.
	edited := load("z", simUnit("127.0.0.1:9000", "[0, 1]")+"description = \"edited\"\n")
	if got := CheckConflicts([]*Unit{edited}, []*Unit{running}); len(got) != 0 {
		t.Errorf("edit conflicts with itself: %v", got)
	}
	// Without held units, name order decides.
	got = CheckConflicts([]*Unit{running, newcomer}, nil)
	if len(got["a"]) != 0 || !strings.Contains(got["z"].Error(), "chip 1 already claimed by unit a") {
		t.Errorf("name order: %v", got)
	}
}

// TestLoadDirConfigMap mimics a Kubernetes ConfigMap volume: files are
// symlinks through "..data" to a timestamped folder that is swapped.
func TestLoadDirConfigMap(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_01_01_00_00_00.1")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ts, map[string]string{"llama.toml": simUnit("127.0.0.1:8000", "")})
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "llama.toml"), filepath.Join(dir, "llama.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere.toml", filepath.Join(dir, "dangling.toml")); err != nil {
		t.Fatal(err)
	}
	set, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 2 {
		t.Fatalf("files: %+v", set.Files)
	}
	if f := set.File("llama"); f == nil || f.Unit == nil {
		t.Fatalf("llama not loaded: %+v", f)
	}
	if f := set.File("dangling"); f == nil || !strings.Contains(f.Err.Error(), "no such file") {
		t.Fatalf("dangling: %+v", f)
	}
	hash := set.File("llama").Hash
	// Swap the data folder: the hash follows the content.
	ts2 := filepath.Join(dir, "..2026_01_01_00_00_01.2")
	if err := os.Mkdir(ts2, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ts2, map[string]string{"llama.toml": simUnit("127.0.0.1:8001", "")})
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts2), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	set, err = LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := set.File("llama")
	if f.Hash == hash || f.Unit == nil || f.Unit.Listen != "127.0.0.1:8001" {
		t.Errorf("after swap: hash same=%v unit=%+v", f.Hash == hash, f.Unit)
	}
}

func TestLoadDirMissing(t *testing.T) {
	if _, err := LoadDir(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "read units folder") {
		t.Errorf("got %v", err)
	}
}
