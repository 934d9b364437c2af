package vllm

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/units"
)

// envFileName is the env file's name inside the start's private folder.
const envFileName = "secrets.env"

// RuntimeDir is where a start keeps files that live as long as the server:
// $TTIS_RUNTIME_DIR, else systemd's $RUNTIME_DIRECTORY, else the temp folder.
func RuntimeDir() string {
	for _, k := range []string{"TTIS_RUNTIME_DIR", "RUNTIME_DIRECTORY"} {
		if d := os.Getenv(k); d != "" {
			return d
		}
	}
	return os.TempDir()
}

// startSecrets holds the secrets of one start: read from the unit's files,
// and for a container written to an env file that only the daemon's user
// can read, which docker reads and the container gets as environment. run.py
// does the same with its .env (run_docker_server.py line 328: "--env-file is
// just used for secrets"). Nothing here is ever logged.
type startSecrets struct {
	env     map[string]string
	envFile string
	dir     string
}

// readSecrets reads u's secrets and adds extra (a media server's API key);
// for a docker start it writes them to a 0600 env file in a fresh 0700
// folder under runtimeDir. A local command gets them as environment.
func readSecrets(u *units.Unit, runtimeDir string, extra map[string]string) (*startSecrets, error) {
	s := &startSecrets{env: maps.Clone(extra)}
	if s.env == nil {
		s.env = map[string]string{}
	}
	if u.Vllm.HFTokenFile != "" {
		tok, err := auth.ReadSecret(u.Vllm.HFTokenFile)
		if err != nil {
			return nil, fmt.Errorf("[vllm] hf_token_file: %w", err)
		}
		if bytes.ContainsAny(tok, "\r\n\x00") {
			return nil, fmt.Errorf("[vllm] hf_token_file %s: the token spans several lines; the file must hold the token alone", u.Vllm.HFTokenFile)
		}
		s.env["HF_TOKEN"] = string(tok)
	}
	for k, v := range s.env {
		// An env file holds one KEY=VALUE a line, taken literally.
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("secret %s spans several lines; an env file cannot carry it", k)
		}
	}
	if len(s.env) == 0 || len(u.Vllm.Command) > 0 {
		return s, nil
	}
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return nil, fmt.Errorf("runtime folder for the env file: %w", err)
	}
	dir, err := os.MkdirTemp(runtimeDir, "ttis-"+u.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("runtime folder for the env file: %w", err)
	}
	s.dir = dir
	path := filepath.Join(dir, envFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.remove()
		return nil, fmt.Errorf("write env file: %w", err)
	}
	var werr error
	for _, k := range slices.Sorted(maps.Keys(s.env)) {
		if _, err := fmt.Fprintf(f, "%s=%s\n", k, s.env[k]); err != nil && werr == nil {
			werr = err
		}
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		s.remove()
		return nil, fmt.Errorf("write env file %s: %w", path, werr)
	}
	s.envFile = path
	return s, nil
}

// remove deletes the env file and its folder.
func (s *startSecrets) remove() {
	if s != nil && s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
