package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon"
)

// daemonFlags are ttisd's flags in supervisor mode; each overrides the
// matching key of the configuration file.
func daemonFlags() []cli.Flag {
	// Values shown as defaults are the configuration's; a flag applies
	// only when given, so the file wins over a flag left out.
	def := daemon.DefaultConfig()
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: daemon.DefaultConfigPath, EnvVars: []string{"TTISD_CONFIG"}, Usage: "configuration file (TOML); the default path may be absent"},
		&cli.StringFlag{Name: "units-dir", Value: def.UnitsDir, Usage: "folder of unit files (units_dir)"},
		&cli.StringFlag{Name: "state-dir", Value: def.StateDir, Usage: "folder for results and state (state_dir)"},
		&cli.StringFlag{Name: "socket", Value: def.Socket, Usage: "control API unix socket (socket)"},
		&cli.StringFlag{Name: "socket-group", Value: def.SocketGroup, Usage: "group of the control socket; \"\" keeps the user's (socket_group)"},
		&cli.StringFlag{Name: "log-format", Value: def.LogFormat, Usage: "auto (coloured text on a terminal, else JSON), text or json (log_format)"},
		&cli.StringFlag{Name: "log-level", Value: def.LogLevel, Usage: "debug, info, warn or error (log_level)"},
		&cli.StringFlag{Name: "device-root", Value: def.DeviceRoot, Usage: "folder of accelerator device nodes (device_root)"},
		&cli.DurationFlag{Name: "rescan-interval", Value: def.RescanInterval.Duration, Usage: "safety-net rescan of the units folder (rescan_interval)"},
		&cli.StringFlag{Name: "server-executable", Usage: "program run as \"EXE serve UNIT_FILE\" for each unit (server_executable; default: this ttisd)"},
		&cli.BoolFlag{Name: "live-restore", Usage: "leave the servers running when ttisd stops, for the next ttisd to adopt (live_restore)"},
		&cli.StringFlag{Name: "metrics-listen", Usage: "host:port for Prometheus metrics at /metrics (metrics_listen; default: none)"},
		&cli.StringSliceFlag{Name: "model-dir", Usage: "folder model files may live in; repeatable (model_dirs; default: STATE_DIR/models, /var/lib/ttis/models and the Hub cache)"},
	}
}

// runDaemon loads the configuration, applies the flags and runs the
// supervisor until SIGTERM.
func runDaemon(c *cli.Context) error {
	if c.NArg() > 0 {
		return cli.Exit("ttisd: unexpected argument "+c.Args().First()+" (did you mean \"ttisd serve UNIT_FILE\"?)", 2)
	}
	cfg, err := daemon.LoadConfig(c.String("config"), c.IsSet("config"))
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	for flag, field := range map[string]*string{
		"units-dir": &cfg.UnitsDir, "state-dir": &cfg.StateDir, "socket": &cfg.Socket,
		"socket-group": &cfg.SocketGroup, "log-format": &cfg.LogFormat, "log-level": &cfg.LogLevel,
		"device-root": &cfg.DeviceRoot, "server-executable": &cfg.ServerExecutable, "metrics-listen": &cfg.MetricsListen,
	} {
		if c.IsSet(flag) {
			*field = c.String(flag)
		}
	}
	if c.IsSet("model-dir") {
		cfg.ModelDirs = c.StringSlice("model-dir")
	}
	if c.IsSet("live-restore") {
		cfg.LiveRestore = c.Bool("live-restore")
	}
	if c.IsSet("rescan-interval") {
		cfg.RescanInterval.Duration = c.Duration("rescan-interval")
	}
	if err := cfg.Validate(); err != nil {
		return cli.Exit(err.Error(), 2)
	}
	log, err := daemon.NewLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	return daemon.Run(c.Context, cfg, daemon.Options{Version: version, Logger: log})
}
