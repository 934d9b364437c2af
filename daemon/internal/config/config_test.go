package config

import (
	"os"
	"path/filepath"
	"reflect"
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
		{name: "control defaults", data: "", check: func(c Config) bool {
			return c.Control == Control{MaxConnections: 2048, MaxFollowers: 512, MaxActions: 64, MaxQueries: 256, FDReserve: 1024}
		}},
		{name: "control limits", data: "[control]\nmax_connections = 100\nmax_followers = 10\nmax_actions = 2\nmax_queries = 20\nfd_reserve = 200\n",
			check: func(c Config) bool {
				return c.Control == Control{MaxConnections: 100, MaxFollowers: 10, MaxActions: 2, MaxQueries: 20, FDReserve: 200}
			}},
		{name: "control unknown key", data: "[control]\nmax_follower = 3\n", wantErr: `ttisd.toml:2:1: unknown key "control.max_follower"`},
		{name: "control zero", data: "[control]\nmax_actions = 0\n", wantErr: "ttisd.toml: control.max_actions: 0 must be at least 1"},
		{name: "control small reserve", data: "[control]\nfd_reserve = 10\n", wantErr: "control.fd_reserve: 10 must be at least 64"},
		{name: "control kinds over connections", data: "[control]\nmax_connections = 600\n",
			wantErr: "control.max_connections: 600 is less than max_followers + max_actions + max_queries (512 + 64 + 256 = 832)"},
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

// The example file the package installs shows every default, [control]
// included: read over zero values, it must give Default().
func TestExampleFileShowsTheDefaults(t *testing.T) {
	path := filepath.Join("..", "..", "..", "packaging", "etc", "ttisd.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := Parse(path, data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.ModelDirs) == 0 {
		got.ModelDirs = nil // the file's [] means the same as none
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n%+v\nwant the defaults\n%+v", path, got, want)
	}
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
