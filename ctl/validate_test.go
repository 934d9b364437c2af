package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCtl runs ttisctl's Main with args and returns what it printed (stdout
// and stderr together) and its exit status.
func runCtl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Main(ctx, "test", append([]string{"ttisctl"}, args...), &out, &out)
	return out.String(), code
}

// runCtlStdout is runCtl with stdout alone, for machine-read output.
func runCtlStdout(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code = Main(ctx, "test", append([]string{"ttisctl"}, args...), &out, &errs)
	return out.String(), errs.String(), code
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
	// -o json before the command or after the files.
	out, _, code = runCtlStdout(t, "validate", a, bad, "-o", "json")
	if code != 1 {
		t.Errorf("json: code %d", code)
	}
	var results []validateResult
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("json output %q: %v", out, err)
	}
	if len(results) != 2 || !results[0].OK || results[1].OK || results[1].Errors[0].Line != 4 || results[1].Errors[0].Field != "listen" {
		t.Errorf("results %+v", results)
	}
	if _, code := runCtl(t, "validate"); code != 2 {
		t.Errorf("no files: code %d, want 2", code)
	}
	if out, code := runCtl(t, "--output", "json", "validate", a); code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Errorf("global -o json: code %d %s", code, out)
	}
	if out, code := runCtl(t, "validate", a, "--bogus"); code != 2 || !strings.HasPrefix(out, "ttisctl validate: ") {
		t.Errorf("unknown flag after a file: code %d %q, want a usage error", code, out)
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
