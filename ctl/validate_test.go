package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runCtl runs ttisctl with args and returns stdout and the exit code main
// would use.
func runCtl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	app := App("test")
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.RunContext(context.Background(), append([]string{"ttisctl"}, args...))
	code := 0
	if err != nil {
		code = 1
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			out.WriteString("ttisctl: " + msg + "\n")
		}
	}
	return out.String(), code
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	unit := func(listen, chips string) string {
		return "model = \"Qwen3-8B\"\ndevice = \"n300\"\nruntime = \"sim\"\nlisten = \"" + listen + "\"\nchips = " + chips + "\n"
	}
	files := map[string]string{
		"a.toml":   unit("127.0.0.1:8000", "[0, 1]"),
		"b.toml":   unit("127.0.0.1:8001", "[1, 2]"),
		"bad.toml": "model = \"Qwen3-8B\"\ndevice = \"n300\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:99999\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b, bad := filepath.Join(dir, "a.toml"), filepath.Join(dir, "b.toml"), filepath.Join(dir, "bad.toml")

	out, code := runCtl(t, "validate", a)
	if code != 0 || out != "OK "+a+"\n" {
		t.Errorf("one good file: code %d, output %q", code, out)
	}
	out, code = runCtl(t, "validate", b, a, bad)
	if code != 1 {
		t.Errorf("code %d, want 1", code)
	}
	for _, want := range []string{
		"OK " + a + "\n",
		b + ":5:10: chips[0]: chip 1 already claimed by unit a",
		bad + ":4:1: listen: invalid port \"99999\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, code = runCtl(t, "--output", "json", "validate", a, bad)
	if code != 1 {
		t.Errorf("json: code %d", code)
	}
	var results []validateResult
	if err := json.Unmarshal([]byte(strings.SplitN(out, "ttisctl:", 2)[0]), &results); err != nil {
		t.Fatalf("json output %q: %v", out, err)
	}
	if len(results) != 2 || !results[0].OK || results[1].OK || results[1].Errors[0].Line != 4 || results[1].Errors[0].Field != "listen" {
		t.Errorf("results %+v", results)
	}
	if _, code := runCtl(t, "validate"); code != 2 {
		t.Errorf("no files: code %d, want 2", code)
	}
	if _, code := runCtl(t, "validate", a, "-o", "json"); code != 2 {
		t.Errorf("flag after file: code %d, want 2", code)
	}
}

func TestValidateDuplicateNames(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	body := []byte("model = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n")
	for _, d := range []string{d1, d2} {
		if err := os.WriteFile(filepath.Join(d, "x.toml"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := runCtl(t, "validate", filepath.Join(d1, "x.toml"), filepath.Join(d2, "x.toml"))
	if code != 1 || !strings.Contains(out, "unit name x is also the name of") {
		t.Errorf("code %d output %s", code, out)
	}
}
