package schedule

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/daemon/runs"
	"github.com/ttis-dev/ttis/units"
)

func TestTargetOf(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("key-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		u    units.Unit
		want func(t *testing.T, base, key string)
		err  string
	}{
		{"wildcard listen, api key", units.Unit{Name: "a", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "sim", Listen: "0.0.0.0:8001",
			Auth: units.Auth{Mode: "api-key", SecretFile: secret}}, func(t *testing.T, base, key string) {
			if base != "http://127.0.0.1:8001" || key != "key-123" {
				t.Errorf("base %s key %q", base, key)
			}
		}, ""},
		{"jwt is minted", units.Unit{Name: "b", Model: "M", Listen: "127.0.0.1:9", Auth: units.Auth{Mode: "jwt", SecretFile: secret}},
			func(t *testing.T, _, key string) {
				if strings.Count(key, ".") != 2 {
					t.Errorf("key %q is not a JWT", key)
				}
			}, ""},
		{"missing secret", units.Unit{Name: "c", Model: "M", Listen: "127.0.0.1:9", Auth: units.Auth{Mode: "jwt", SecretFile: filepath.Join(dir, "none")}}, nil, "unit c"},
		{"bad listen", units.Unit{Name: "d", Model: "M", Listen: "nowhere"}, nil, "unit d"},
		{"bad auth mode", units.Unit{Name: "e", Model: "M", Listen: "127.0.0.1:9", Auth: units.Auth{Mode: "magic"}}, nil, "unknown auth mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TargetOf(context.Background(), &tc.u)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Unit != tc.u.Name || got.Simulated != (tc.u.Runtime == "sim") {
				t.Errorf("target %+v", got)
			}
			tc.want(t, got.BaseURL, got.APIKey)
		})
	}
}

func TestWorkflowRunnerRefusesInactiveUnit(t *testing.T) {
	store := &runs.Store{Root: t.TempDir()}
	run := WorkflowRunner(store, "test", func(string) error { return errors.New("unit a is failed, not active") }, nil)
	err := run(context.Background(), &units.Unit{Name: "a", Model: "M", Listen: "127.0.0.1:9"}, units.Schedule{Workflow: "release"})
	if err == nil || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("error %v", err)
	}
	if list, _ := store.List(""); len(list) != 0 {
		t.Errorf("a run was recorded: %v", list)
	}
}
