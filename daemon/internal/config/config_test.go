package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
		check               func(Config) bool
	}{
		{name: "empty", data: "", check: func(c Config) bool {
			return c.UnitsDir == "/etc/ttis/units" && c.RescanInterval.Duration == 30*time.Second
		}},
		{name: "override", data: "units_dir = \"/u\"\nrescan_interval = \"5s\"\nreset_command = [\"r\"]\n",
			check: func(c Config) bool {
				return c.UnitsDir == "/u" && c.RescanInterval.Duration == 5*time.Second && len(c.ResetCommand) == 1
			}},
		{name: "unknown key", data: "units_dir = \"/u\"\nsoket = \"x\"\n", wantErr: `ttisd.toml:2:1: unknown key "soket"`},
		{name: "wrong type", data: "log_lines = \"many\"\n", wantErr: "ttisd.toml:1:"},
		{name: "bad duration", data: "rescan_interval = \"30\"\n", wantErr: "ttisd.toml:1:"},
		{name: "bad format", data: "log_format = \"xml\"\n", wantErr: "log_format"},
		{name: "bad level", data: "log_level = \"loud\"\n", wantErr: "log_level"},
		{name: "long socket", data: "socket = \"/" + strings.Repeat("s", 120) + "\"\n", wantErr: "longer than"},
		{name: "broken toml", data: "units_dir = \n", wantErr: "ttisd.toml:1:"},
		{name: "metrics listen", data: "metrics_listen = \"127.0.0.1:9464\"\n", check: func(c Config) bool { return c.MetricsListen == "127.0.0.1:9464" }},
		{name: "bad metrics listen", data: "metrics_listen = \"9464\"\n", wantErr: "metrics_listen: \"9464\" is not host:port"},
		{name: "hub keys", data: "hub_cache = \"/c\"\nhf_endpoint = \"https://mirror.example/hf\"\nhf_token_file = \"/etc/ttis/hf_token\"\noffline = true\n",
			check: func(c Config) bool {
				return c.HubCacheDir() == "/c" && c.Endpoint() == "https://mirror.example/hf" && c.HFTokenFile == "/etc/ttis/hf_token" && c.Offline
			}},
		{name: "default hub cache", data: "state_dir = \"/s\"\n", check: func(c Config) bool { return c.HubCacheDir() == "/s/hub" }},
		{name: "default model folders", data: "state_dir = \"/s\"\nhub_cache = \"/c\"\n", check: func(c Config) bool {
			return strings.Join(c.ModelFolders(), " ") == "/s/models /var/lib/ttis/models /c"
		}},
		{name: "model folders", data: "model_dirs = [\"/m\"]\n", check: func(c Config) bool {
			return strings.Join(c.ModelFolders(), " ") == "/m"
		}},
		{name: "bad hf endpoint", data: "hf_endpoint = \"mirror:8080\"\n", wantErr: "hf_endpoint: \"mirror:8080\" is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			err := Parse("ttisd.toml", []byte(tt.data), &cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none.toml")
	if _, err := Load(p, false); err != nil {
		t.Fatalf("optional missing config: %v", err)
	}
	if _, err := Load(p, true); err == nil {
		t.Fatal("required missing config loaded")
	}
	if err := os.WriteFile(p, []byte("state_dir = \"/s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, true)
	if err != nil || c.StateDir != "/s" {
		t.Fatalf("Load = %+v, %v", c, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("units_dir = \"/u\"\n"))
	f.Add([]byte("rescan_interval = \"1s\"\n[x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		_ = Parse("f.toml", data, &cfg)
	})
}

// A named pipe as the configuration is refused at once, not waited on.
func TestLoadPipe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ttisd.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(p, true)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "read config: "+p+": not a regular file (a named pipe)" {
			t.Errorf("error %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Load blocked on a pipe for 30s")
	}
}
