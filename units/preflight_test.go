package units_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units"
)

// The pre-start checks name the file, line and field of each problem, all
// at once: a model file outside the model folders, an empty secret file,
// an empty Hugging Face token.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"outside.gguf": "GGUF", "models/inside.gguf": "GGUF", "empty-key": "\n", "key": "k3y\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, text string) *units.Unit {
		t.Helper()
		p := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		u, err := units.Load(p)
		if err != nil {
			t.Fatalf("%s does not load: %v", name, err)
		}
		return u
	}
	host := units.Host{ModelDirs: []string{models}}
	bad := write("bad", "device = \"cpu\"\nlisten = \"127.0.0.1:8000\"\nmodel = \"outside.gguf\"\n\n[auth]\nmode = \"api-key\"\nsecret_file = \"empty-key\"\n")
	err := units.Preflight(bad, host)
	list := units.Errors(err)
	if len(list) != 2 {
		t.Fatalf("Preflight = %v, want two problems", err)
	}
	for i, want := range []struct {
		line  int
		field string
		msg   string
	}{{3, "model", "is outside the model folders (" + models + ")"}, {7, "auth.secret_file", "is empty"}} {
		e := list[i]
		if e.File != bad.Path || e.Line != want.line || e.Field != want.field || !strings.Contains(e.Msg, want.msg) {
			t.Errorf("problem %d: %v, want line %d, %s: …%s…", i, e, want.line, want.field, want.msg)
		}
	}
	good := write("good", "device = \"cpu\"\nlisten = \"127.0.0.1:8000\"\nmodel = \"models/inside.gguf\"\n\n[auth]\nmode = \"api-key\"\nsecret_file = \"key\"\n")
	if err := units.Preflight(good, host); err != nil {
		t.Errorf("good unit: %v", err)
	}
	if err := units.Preflight(good, units.Host{}); err == nil || !strings.Contains(err.Error(), "no model folders are configured") {
		t.Errorf("no model folders: %v", err)
	}
	hf := write("hf", "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nchips = [0]\nlisten = \"127.0.0.1:8001\"\n[vllm]\nhf_token_file = \"empty-key\"\n")
	if err := units.Preflight(hf, host); err == nil || !strings.Contains(err.Error(), "hf.toml:6:1: vllm.hf_token_file: secret file") {
		t.Errorf("empty token file: %v", err)
	}
}

// ReadSecret never blocks: a named pipe where the secret should be is
// refused at once, a file swapped for one included.
func TestReadSecretRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := units.ReadSecret(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadSecret(fifo) = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadSecret blocked on a named pipe")
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"open to group": {"k", 0o640, "must not be accessible by group or others"},
		"empty":         {" \n\t", 0o600, "is empty"},
		"huge":          {strings.Repeat("k", units.MaxSecretBytes+1), 0o600, "larger than"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := units.ReadSecret(p); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "kkkk") {
			t.Errorf("%s: %v, want %q (and never the content)", name, err, c.want)
		}
	}
}
