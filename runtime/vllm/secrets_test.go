package vllm

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units"
)

const testToken = "hf_secretTOKENvalue123"

// fakeDocker puts a `docker` first on PATH that records its argv, its
// environment and the env file's contents and mode, then exits 1 (no
// server), and returns the record's path.
func fakeDocker(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	rec := filepath.Join(t.TempDir(), "record")
	script := `#!/bin/sh
out="` + rec + `"
echo "argv: $*" > "$out"
env | grep -c HF_TOKEN | sed 's/^/env-hf-count: /' >> "$out"
while [ $# -gt 0 ]; do
  if [ "$1" = "--env-file" ]; then
    echo "envfile-mode: $(stat -c %a "$2")" >> "$out"
    echo "envfile-dir-mode: $(stat -c %a "$(dirname "$2")")" >> "$out"
    echo "envfile: $(cat "$2")" >> "$out"
  fi
  shift
done
echo "container failed" >&2
exit 1
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return rec
}

// startWithFakeDocker opens u with an HF token file against fakeDocker,
// on this chipless host (host checks warn), and returns the start's
// runtime folder, the docker record, the log and Open's error, which must
// be one: the fake container exits.
func startWithFakeDocker(t *testing.T, u *units.Unit) (runDir, record, logs string, err error) {
	t.Helper()
	rec := fakeDocker(t)
	runDir = t.TempDir()
	t.Setenv("TTIS_RUNTIME_DIR", runDir)
	tokFile := filepath.Join(t.TempDir(), "hf-token")
	if err := os.WriteFile(tokFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u.Runtime = "vllm"
	u.Vllm.HFTokenFile = tokFile
	u.Vllm.HostChecks = units.HostChecksWarn
	var buf bytes.Buffer
	_, err = Open(context.Background(), u, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err == nil {
		t.Fatal("Open succeeded with a docker that exits")
	}
	b, rerr := os.ReadFile(rec)
	if rerr != nil {
		t.Fatalf("fake docker did not run: %v", rerr)
	}
	return runDir, string(b), buf.String(), err
}

func TestHFTokenTravelsInEnvFileOnly(t *testing.T) {
	u := &units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0}}
	u.Vllm.Port = 18123
	u.Vllm.Env = map[string]string{"WANDB_API_KEY": "wandb-secret-value"}
	runDir, record, logs, err := startWithFakeDocker(t, u)
	argv, _, _ := strings.Cut(record, "\n")
	if strings.Contains(argv, testToken) {
		t.Errorf("token in docker argv: %s", argv)
	}
	for _, want := range []string{"--env-file " + runDir + "/ttis-llama-", "envfile-mode: 600", "envfile-dir-mode: 700", "envfile: HF_TOKEN=" + testToken, "env-hf-count: 0"} {
		if !strings.Contains(record, want) {
			t.Errorf("record lacks %q:\n%s", want, record)
		}
	}
	for _, s := range []string{logs, err.Error()} {
		if strings.Contains(s, testToken) || strings.Contains(s, "wandb-secret-value") {
			t.Errorf("token leaked into logs or error: %s", s)
		}
	}
	if !strings.Contains(logs, "WANDB_API_KEY=<redacted>") {
		t.Errorf("the start's log does not show the redacted variable:\n%s", logs)
	}
	left, _ := os.ReadDir(runDir)
	if len(left) != 0 {
		t.Errorf("env file folder left after a failed start: %v", left)
	}
}

func TestHFTokenFileModeEnforced(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "hf-token")
	if err := os.WriteFile(tokFile, []byte(testToken), 0o644); err != nil {
		t.Fatal(err)
	}
	u := &units.Unit{Name: "x"}
	u.Vllm.HFTokenFile = tokFile
	_, err := readSecrets(u, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), testToken) {
		t.Errorf("readSecrets with mode 0644 = %v", err)
	}
}

func TestHFTokenForLocalCommandIsEnvironment(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "hf-token")
	if err := os.WriteFile(tokFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n150")
	u := &units.Unit{Name: "x", Model: "Llama-3.1-8B-Instruct", Device: "n150", Chips: []int{0}}
	u.Vllm.HFTokenFile = tokFile
	u.Vllm.Command = []string{"vllm", "serve", "{args}"}
	dir := t.TempDir()
	s, err := readSecrets(u, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.envFile != "" {
		t.Errorf("a local command got an env file %s", s.envFile)
	}
	l, err := PlanWith(u, spec, 9000, PlanOptions{Secrets: s.env})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(l.Argv, " "), testToken) {
		t.Error("token in argv")
	}
	found := false
	for _, kv := range l.Env {
		found = found || kv == "HF_TOKEN="+testToken
	}
	if !found {
		t.Errorf("HF_TOKEN missing from the local command's environment")
	}
}

func TestHostChecksBlockTheStart(t *testing.T) {
	rec := fakeDocker(t)
	if _, err := os.Stat("/dev/tenstorrent/0"); err == nil {
		t.Skip("this host has a Tenstorrent chip")
	}
	u := &units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0, 1}, Runtime: "vllm"}
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n300")
	u.Spec = spec
	u.Vllm.Port = 18124
	_, err := Open(context.Background(), u, discard())
	if err == nil || !strings.Contains(err.Error(), "host not ready: ") || !strings.Contains(err.Error(), "chips: chips [0 1] missing") ||
		!strings.Contains(err.Error(), "ttisctl doctor llama") {
		t.Fatalf("Open on a host without chips = %v", err)
	}
	if b, _ := os.ReadFile(rec); strings.Contains(string(b), "argv: run") {
		t.Errorf("docker run was called although the host is not ready:\n%s", b)
	}
}
