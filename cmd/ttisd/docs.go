package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/packaging/clidoc"
)

// docsCommand prints ttisd(8) or a completion script, generated from this
// binary's own command tree; "make docs" runs it (ttisctl's pages come
// from packaging/internal/gendocs). Hidden: it is for packaging.
func docsCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen-docs",
		Hidden:    true,
		Usage:     "print ttisd(8) (man) or a completion script (bash, zsh, fish)",
		ArgsUsage: "man|bash|zsh|fish",
		Action: func(c *cli.Context) error {
			var out []byte
			switch c.Args().First() {
			case "man":
				out = clidoc.Man(c.App, ttisdPage(c.App.Version))
			case "bash":
				out = clidoc.Bash(c.App)
			case "zsh":
				out = clidoc.Zsh(c.App)
			case "fish":
				out = clidoc.Fish(c.App)
			default:
				return cli.Exit("usage: ttisd gen-docs man|bash|zsh|fish", 2)
			}
			_, err := c.App.Writer.Write(out)
			return err
		},
	}
}

func ttisdPage(version string) clidoc.Page {
	return clidoc.Page{
		Section: 8,
		Source:  "ttis " + version,
		Synopsis: []string{
			"ttisd [options]",
			"ttisd serve [options] UNIT_FILE",
		},
		Sections: []clidoc.Section{
			{Title: "DESCRIPTION", Blocks: []clidoc.Block{
				{Text: "ttisd keeps model inference servers running on Tenstorrent hardware and proves they are fast and accurate. Run without a command, it is the host daemon: it reads its configuration, watches the units folder (one TOML file per served model, see ttis.unit(5)) and keeps one server per unit running, restarting it by the unit's policy, and runs the benchmark, eval and release workflows the units schedule. ttisctl(1) talks to it over a unix socket."},
				{Text: "ttisd serve UNIT_FILE runs one unit's OpenAI-compatible inference server in the foreground; the daemon starts one such process per unit, and it may be run by hand."},
				{Text: "Under systemd (packaging/systemd/ttisd.service) ttisd is Type=notify with a watchdog. When its standard error is the journal stream, each line carries its syslog priority, so journalctl -p warning -u ttisd selects warnings and errors."},
				{Text: "Command-line flags override the configuration file's keys, named in parentheses."},
			}},
			{Title: "SIGNALS", Blocks: []clidoc.Block{
				{Tag: "SIGTERM, SIGINT", Text: "Stop: drain every unit (SIGTERM, then SIGKILL of each server's process group after its stop_timeout) and exit."},
				{Tag: "SIGHUP", Text: "Reload: rescan the units folder now (systemctl reload ttisd)."},
			}},
			{Title: "EXIT STATUS", Blocks: []clidoc.Block{
				{Tag: "0", Text: "Stopped on a signal after draining."},
				{Tag: "1", Text: "A runtime failure."},
				{Tag: "2", Text: "Bad flags, arguments or configuration."},
			}},
			{Title: "FILES", Blocks: []clidoc.Block{
				{Tag: "/etc/ttis/ttisd.toml", Text: "Configuration (--config); every key is optional."},
				{Tag: "/etc/ttis/units/", Text: "Unit files (units_dir)."},
				{Tag: "/var/lib/ttis/", Text: "State and results: runs/<unit>/<run-id>/ (state_dir)."},
				{Tag: "/run/ttis/ttisd.sock", Text: "Control socket for ttisctl (socket), group ttis."},
				{Tag: "/dev/tenstorrent/N", Text: "Accelerator chips claimed by units (device_root)."},
			}},
			{Title: "SEE ALSO", Blocks: []clidoc.Block{{Text: fmt.Sprintf("%s, %s, %s, %s", "ttisctl(1)", "ttis.unit(5)", "systemd.exec(5)", "journalctl(1)")}}},
		},
	}
}
