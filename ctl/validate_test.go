package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
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

// ttisctl validate and ttisd refuse the same units, for the same reasons:
// a model file outside the model folders and an empty secret file fail
// validate (exit 1) and are failed by the daemon before any start, with
// the reason in status and no restarts; the good unit passes both.
func TestValidateRunsTheDaemonsPreStartChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ttisd and a cpu unit")
	}
	dir := t.TempDir()
	models, elsewhere := filepath.Join(dir, "models"), filepath.Join(dir, "elsewhere")
	for _, p := range []string{filepath.Join(models, "tiny.gguf"), filepath.Join(elsewhere, "tiny.gguf")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, code := runCtl(t, "model", "create", p); code != 0 {
			t.Fatalf("model create: %d %s", code, out)
		}
	}
	empty := filepath.Join(dir, "empty-key")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	cpu := func(model string, extra string) string {
		return fmt.Sprintf("model = %q\ndevice = \"cpu\"\nlisten = \"127.0.0.1:%d\"\n[restart]\ndelay = \"100ms\"\n%s", model, port(), extra)
	}
	files := map[string]string{
		"good":     cpu(filepath.Join(models, "tiny.gguf"), ""),
		"outside":  cpu(filepath.Join(elsewhere, "tiny.gguf"), ""),
		"emptykey": cpu(filepath.Join(models, "tiny.gguf"), "[auth]\nmode = \"api-key\"\nsecret_file = "+strconv.Quote(empty)+"\n"),
	}
	sock := runDaemon(t, filepath.Join(dir, "d"), files, "--model-dir", models)
	unitsDir := filepath.Join(dir, "d", "units")
	paths := []string{filepath.Join(unitsDir, "emptykey.toml"), filepath.Join(unitsDir, "good.toml"), filepath.Join(unitsDir, "outside.toml")}
	reasons := map[string]string{"emptykey": "is empty", "outside": "is outside the model folders (" + models + ")"}
	// With --model-dir, and with the model folders the daemon reports.
	for _, args := range [][]string{{"validate", "--model-dir", models}, {"--socket", sock, "validate"}} {
		out, code := runCtl(t, append(args, paths...)...)
		if code != exitError || !strings.Contains(out, "OK "+paths[1]) {
			t.Errorf("%v: exit %d, want 1 with good OK:\n%s", args, code, out)
		}
		for name, why := range reasons {
			if !strings.Contains(out, filepath.Join(unitsDir, name+".toml")+":") || !strings.Contains(out, why) {
				t.Errorf("%v: no %q for %s:\n%s", args, why, name, out)
			}
		}
	}
	dc := daemonclient.New(sock)
	deadline := time.Now().Add(60 * time.Second)
	for name := range files {
		for {
			u, err := dc.Unit(context.Background(), name, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := api.StateActive
			if reasons[name] != "" {
				want = api.StateFailed
			}
			if u.State == want {
				if why := reasons[name]; why != "" && (u.Result != api.ResultPreStart || !strings.Contains(u.LastError, "pre-start check failed") ||
					!strings.Contains(u.LastError, why) || u.PID != 0) {
					t.Errorf("%s: %+v", name, u.Unit)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s (%s), want %s: %s", name, u.State, u.Result, want, u.LastError)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// No crash loop: the refused units are never restarted.
	time.Sleep(time.Second)
	for name := range reasons {
		if u, err := dc.Unit(context.Background(), name, 0); err != nil || u.State != api.StateFailed || u.Restarts != 0 {
			t.Errorf("%s a second later: %+v %v", name, u.Unit, err)
		}
	}
}
