package ctl

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorBareHost(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "runtime", "host", "testdata", "roots", "bare"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "llama.toml")
	if err := os.WriteFile(unit, []byte("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n300\"\nchips = [0, 1]\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, "doctor", unit, "--root", root)
	if code != exitNotReady {
		t.Fatalf("doctor on a bare host exited %d:\n%s", code, out)
	}
	for _, want := range []string{"unit llama: Llama-3.1-8B-Instruct on n300", "FAIL  chips     chips [0 1] missing", "FAIL  kmd", "fix: ", "not ready: a start of this unit is blocked"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	stdout, _, code := runCtlStdout(t, "doctor", "--root", root, "-o", "json")
	if code != exitNotReady {
		t.Fatalf("doctor -o json exited %d", code)
	}
	var got doctorOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if got.Ready || len(got.Checks) != 9 || got.Checks[0].Name != "ram" {
		t.Errorf("doctor json = %+v", got)
	}
}

func TestDoctorAutoDeviceWithoutTTSMI(t *testing.T) {
	if _, err := exec.LookPath("tt-smi"); err == nil {
		t.Skip("tt-smi is installed here")
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "auto.toml")
	if err := os.WriteFile(unit, []byte("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"auto\"\nchips = [0, 1]\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, "doctor", unit, "--root", t.TempDir())
	if code != exitNotReady || !strings.Contains(out, `FAIL  device    `+unit+`:2:1: device: device = "auto": tt-smi is not installed`) {
		t.Errorf("doctor on an auto unit without tt-smi: %d\n%s", code, out)
	}
}

// TestDoctorKnownIssues: doctor warns of the known issues the catalog lists
// for the unit's spec (Llama-3.1-8B-Instruct on p150 waives five evals),
// before the unit starts; they do not decide readiness.
func TestDoctorKnownIssues(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "runtime", "host", "testdata", "roots", "bare"))
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "bh.toml")
	if err := os.WriteFile(unit, []byte("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"p150\"\nchips = [0]\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := runCtl(t, "doctor", unit, "--root", root)
	for _, want := range []string{"unit bh: Llama-3.1-8B-Instruct on p150 (prod catalog)",
		"WARN  known-issue EVALS meta_ifeval is a known issue of id_tt-transformers_Llama-3.1-8B-Instruct_p150",
		"EVALS longbench_code_e is a known issue", "release verdicts waive its failures"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	stdout, _, _ := runCtlStdout(t, "doctor", unit, "--root", root, "-o", "json")
	var got doctorOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	n := 0
	for _, c := range got.Checks {
		if c.Name == "known-issue" {
			n++
			if c.Status != "warn" {
				t.Errorf("known issue %+v is not a warning", c)
			}
		}
	}
	if n != 5 || got.Catalog != "prod" {
		t.Errorf("doctor json: %d known issues, catalog %q", n, got.Catalog)
	}
	// A spec without known issues shows none.
	other := filepath.Join(t.TempDir(), "n.toml")
	if err := os.WriteFile(other, []byte("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n300\"\nchips = [0, 1]\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := runCtl(t, "doctor", other, "--root", root); strings.Contains(out, "known-issue") {
		t.Errorf("known issues for a spec without any:\n%s", out)
	}
}
