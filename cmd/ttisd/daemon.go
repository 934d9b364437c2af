package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon"
)

// daemonFlags are ttisd's flags in supervisor mode; each overrides the
// matching key of the configuration file.
func daemonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: daemon.DefaultConfigPath, EnvVars: []string{"TTISD_CONFIG"}, Usage: "configuration file (TOML); the default path may be absent"},
		&cli.StringFlag{Name: "units-dir", Usage: "folder of unit files (units_dir)"},
		&cli.StringFlag{Name: "state-dir", Usage: "folder for results and state (state_dir)"},
		&cli.StringFlag{Name: "socket", Usage: "control API unix socket (socket)"},
		&cli.StringFlag{Name: "socket-group", Usage: "group of the control socket (socket_group)"},
		&cli.StringFlag{Name: "log-format", Usage: "auto, text or json (log_format)"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (log_level)"},
		&cli.StringFlag{Name: "device-root", Usage: "folder of accelerator device nodes (device_root)"},
		&cli.DurationFlag{Name: "rescan-interval", Usage: "safety-net rescan of the units folder (rescan_interval)"},
		&cli.StringFlag{Name: "server-executable", Usage: "program run as \"EXE serve UNIT_FILE\" for each unit (default: this ttisd)"},
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
		"device-root": &cfg.DeviceRoot, "server-executable": &cfg.ServerExecutable,
	} {
		if c.IsSet(flag) {
			*field = c.String(flag)
		}
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
