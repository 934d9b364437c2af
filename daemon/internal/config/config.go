// Package config reads ttisd's own configuration file (/etc/ttis/ttisd.toml).
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/ttis-dev/ttis/runtime/device"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/hardened"
)

// DefaultPath is where ttisd looks for its configuration.
const DefaultPath = "/etc/ttis/ttisd.toml"

// Config is ttisd's configuration. Every field has a default; command-line
// flags override the file.
type Config struct {
	// UnitsDir holds one TOML file per unit.
	UnitsDir string `toml:"units_dir"`
	// StateDir holds results (runs/) and other persistent state.
	StateDir string `toml:"state_dir"`
	// Socket is the control API's unix socket.
	Socket string `toml:"socket"`
	// SocketGroup owns the socket (mode 0660). A group that does not exist
	// is a warning, not an error, so a normal user can run ttisd.
	SocketGroup string `toml:"socket_group"`
	// LogFormat is "auto" (coloured text on a terminal, JSON otherwise),
	// "text" or "json".
	LogFormat string `toml:"log_format"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// DeviceRoot is the folder of accelerator device nodes.
	DeviceRoot string `toml:"device_root"`
	// ResetCommand resets chips; "<ids>" in an argument becomes the
	// comma-joined chip ids.
	ResetCommand []string `toml:"reset_command"`
	// RescanInterval is the safety-net rescan of the units folder.
	RescanInterval units.Duration `toml:"rescan_interval"`
	// ServerExecutable runs units ("EXE serve UNIT_FILE"); empty means the
	// running ttisd itself.
	ServerExecutable string `toml:"server_executable"`
	// LogLines is how many recent output lines each unit keeps.
	LogLines int `toml:"log_lines"`
	// LiveRestore leaves the servers running when ttisd stops (SIGTERM),
	// for the next ttisd to adopt: an upgrade of the daemon alone then
	// costs no server restart. Under systemd it needs KillMode=process,
	// or systemd stops them with the daemon.
	LiveRestore bool `toml:"live_restore"`
	// MetricsListen is the host:port of ttisd's Prometheus metrics
	// (GET /metrics); empty serves none.
	MetricsListen string `toml:"metrics_listen"`
	// ModelDirs are the folders a cpu unit's model file may live in (a
	// unit naming a file elsewhere fails to start); empty means the
	// state folder's models/ and /var/lib/ttis/models.
	ModelDirs []string `toml:"model_dirs"`
	// HubCache is the Hugging Face cache of eval datasets and model
	// weights (runtime/hub's layout); empty means state_dir/hub.
	HubCache string `toml:"hub_cache"`
	// HFEndpoint is the Hugging Face Hub or a mirror; empty means the
	// HF_ENDPOINT environment variable, else https://huggingface.co.
	HFEndpoint string `toml:"hf_endpoint"`
	// HFTokenFile holds a Hugging Face token (gated datasets such as GPQA
	// and Meta's eval sets, gated weights); it must have mode 0600. It is
	// read at each use, so a rotated token needs no restart.
	HFTokenFile string `toml:"hf_token_file"`
	// Offline makes scheduled runs use only the Hub cache: a task whose
	// data is missing is reported as not measured with the pull command.
	Offline bool `toml:"offline"`
	// Control bounds what the control socket serves at once.
	Control Control `toml:"control"`
}

// Control is the [control] table: the control socket's limits, so that
// its clients can never starve the supervisor of descriptors or memory.
type Control struct {
	// MaxConnections caps open connections, idle ones included; past it a
	// client is answered 503 at once. ttisd lowers it (and the three caps
	// below, in proportion) when RLIMIT_NOFILE less FDReserve is smaller.
	MaxConnections int `toml:"max_connections"`
	// MaxFollowers caps `logs -f` streams open at once.
	MaxFollowers int `toml:"max_followers"`
	// MaxActions caps start, stop, restart and reload calls in progress.
	MaxActions int `toml:"max_actions"`
	// MaxQueries caps status, info, devices and `logs` calls in progress.
	MaxQueries int `toml:"max_queries"`
	// FDReserve is how many file descriptors the control socket leaves to
	// the supervisor's own work: health probes, server starts and their
	// output files, scheduled benchmark runs.
	FDReserve int `toml:"fd_reserve"`
}

// ModelFolders is ModelDirs, or the defaults when none are configured:
// the state folder's models/, /var/lib/ttis/models and the Hub cache, so
// that a GGUF file fetched with `ttisctl model pull` can be served as is.
func (c *Config) ModelFolders() []string {
	if len(c.ModelDirs) > 0 {
		return c.ModelDirs
	}
	return append(units.DefaultModelDirs(c.StateDir), c.HubCacheDir())
}

// HubCacheDir is the Hugging Face cache folder.
func (c *Config) HubCacheDir() string {
	if c.HubCache != "" {
		return c.HubCache
	}
	return filepath.Join(c.StateDir, "hub")
}

// Endpoint is the Hub the daemon pulls from.
func (c *Config) Endpoint() string {
	if c.HFEndpoint != "" {
		return c.HFEndpoint
	}
	return os.Getenv("HF_ENDPOINT")
}

// Default returns the configuration of a system-wide install.
func Default() Config {
	return Config{
		UnitsDir:       "/etc/ttis/units",
		StateDir:       "/var/lib/ttis",
		Socket:         "/run/ttis/ttisd.sock",
		SocketGroup:    "ttis",
		LogFormat:      "auto",
		LogLevel:       "info",
		DeviceRoot:     device.DefaultRoot,
		ResetCommand:   device.DefaultResetCommand(),
		RescanInterval: units.Duration{Duration: 30 * time.Second},
		LogLines:       1000,
		Control: Control{
			MaxConnections: 2048,
			MaxFollowers:   512,
			MaxActions:     64,
			MaxQueries:     256,
			FDReserve:      1024,
		},
	}
}

// Load reads path over the defaults. A missing file is an error only when
// required (the user named it); the default path may be absent.
func Load(path string, required bool) (Config, error) {
	cfg := Default()
	// Read as unit files are (units/hardened): a pipe or a device node in
	// its place must not hang the start, nor a huge file be read.
	ctx, cancel := context.WithTimeout(context.Background(), units.ReadTimeout)
	defer cancel()
	data, err := hardened.ReadFile(ctx, path, units.MaxFileBytes)
	if err != nil {
		if !required && errors.Is(err, os.ErrNotExist) {
			return cfg, nil
		}
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := Parse(path, data, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Parse decodes data strictly over cfg and validates the result. Errors
// name path:line:col.
func Parse(path string, data []byte, cfg *Config) error {
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) && len(sme.Errors) > 0 {
			e := sme.Errors[0]
			line, col := e.Position()
			return fmt.Errorf("%s:%d:%d: unknown key %q", path, line, col, joinKey(e.Key()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return fmt.Errorf("%s:%d:%d: %s", path, line, col, de.Error())
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func joinKey(k []string) string {
	s := ""
	for i, p := range k {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

// Validate checks values a decoder cannot.
func (c *Config) Validate() error {
	switch c.LogFormat {
	case "auto", "text", "json":
	default:
		return fmt.Errorf("log_format: %q is not auto, text or json", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	for name, v := range map[string]string{"units_dir": c.UnitsDir, "state_dir": c.StateDir, "socket": c.Socket} {
		if v == "" {
			return fmt.Errorf("%s: must not be empty", name)
		}
	}
	// sun_path holds 108 bytes on Linux, including the NUL.
	if len(c.Socket) > 107 {
		return fmt.Errorf("socket: path %q is longer than a unix socket allows (107 bytes)", c.Socket)
	}
	for i, d := range c.ModelDirs {
		if d == "" {
			return fmt.Errorf("model_dirs[%d]: must not be empty", i)
		}
	}
	if c.LogLines < 1 {
		return fmt.Errorf("log_lines: %d must be at least 1", c.LogLines)
	}
	if err := c.Control.validate(); err != nil {
		return err
	}
	if err := c.Control.validate(); err != nil {
		return err
	}
	if c.HFEndpoint != "" {
		if u, err := url.Parse(c.HFEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("hf_endpoint: %q is not an http(s) URL (e.g. \"https://huggingface.co\" or a mirror)", c.HFEndpoint)
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("metrics_listen: %q is not host:port (e.g. \"127.0.0.1:9464\"): %w", c.MetricsListen, err)
		}
	}
	return nil
}

// Abs makes the paths absolute, so that the children (which may run in
// another directory) and the API report usable paths.
func (c *Config) Abs() error {
	for _, p := range []*string{&c.UnitsDir, &c.StateDir, &c.Socket, &c.HubCache, &c.HFTokenFile} {
		if *p == "" {
			continue
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = a
	}
	for i, d := range c.ModelDirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		c.ModelDirs[i] = a
	}
	return nil
}

func (c Control) validate() error {
	for _, f := range []struct {
		key string
		v   int
	}{{"max_connections", c.MaxConnections}, {"max_followers", c.MaxFollowers}, {"max_actions", c.MaxActions}, {"max_queries", c.MaxQueries}} {
		if f.v < 1 {
			return fmt.Errorf("control.%s: %d must be at least 1", f.key, f.v)
		}
	}
	if c.FDReserve < 64 {
		return fmt.Errorf("control.fd_reserve: %d must be at least 64 (the supervisor's probes and server starts need descriptors)", c.FDReserve)
	}
	// A flood of one kind may fill its own cap but must leave connections
	// for the others, or status would wait behind thousands of followers.
	if sum := c.MaxFollowers + c.MaxActions + c.MaxQueries; sum > c.MaxConnections {
		return fmt.Errorf("control.max_connections: %d is less than max_followers + max_actions + max_queries (%d + %d + %d = %d): a flood of one kind could hold every connection",
			c.MaxConnections, c.MaxFollowers, c.MaxActions, c.MaxQueries, sum)
	}
	return nil
}
