package reconcile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"
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
