package ctl

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/host"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// exitNotReady: doctor found a failed check (the host cannot start the
// unit); the same code as a FAIL verdict.
const exitNotReady = exitFail

// doctorOutput is `ttisctl doctor -o json`.
type doctorOutput struct {
	Unit   string `json:"unit,omitempty"`
	Model  string `json:"model,omitempty"`
	Device string `json:"device,omitempty"`
	// Catalog is the catalog mode of the unit's spec (prod or dev).
	Catalog string `json:"catalog,omitempty"`
	host.Report
	// Enforced says whether a failed check blocks the unit's start.
	Enforced bool `json:"enforced"`
}

// doctorCommand checks this host's readiness for a unit (or for
// Tenstorrent units in general), as the vllm runtime does before a start.
func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check this host's readiness for a unit: RAM, disk, hugepages, chips, tt-kmd, firmware, docker, tt-smi",
		ArgsUsage: "[UNIT|UNIT_FILE]",
		Description: "Without UNIT, checks what every Tenstorrent unit needs; with UNIT (a file, or a name in\n" +
			"--units-dir), also the catalog's RAM and disk minimums and firmware and tt-kmd pins for its\n" +
			"model, its chips, and docker when it runs a container, and warns of the catalog's known issues\n" +
			"of its spec (what a release will waive). Exits 0 when ready, 3 when a check\n" +
			"failed (the start of the unit would be blocked unless [vllm] host_checks = \"warn\").",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "units-dir", Value: defaultUnitsDir, Usage: "folder of unit files for a UNIT name"},
			devModeFlag("check against tt-inference-server's development specs, as if the unit said catalog = \"dev\""),
			&cli.StringFlag{Name: "root", Value: "/", Usage: "read /proc, /sys and /dev under this folder (for diagnosing a copy of another host's files)"},
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 0, 1)
			if err != nil {
				return err
			}
			out := doctorOutput{Enforced: true}
			need := host.Need{Docker: true}
			var deviceCheck *host.Check
			if len(args) == 1 {
				u, err := loadUnitArgWith(args[0], c.String("units-dir"), loadOptions(c))
				if err != nil {
					// A device = "auto" unit on a host whose boards cannot be
					// read: check the rest, and say why the device is unknown.
					o := loadOptions(c)
					o.DetectDevice = nil
					plain, perr := loadUnitArgWith(args[0], c.String("units-dir"), o)
					if perr != nil || plain.Device != units.DeviceAuto {
						return err
					}
					u = plain
					deviceCheck = &host.Check{Name: "device", Status: host.Fail, Detail: strings.TrimSpace(err.Error()),
						Fix: "install tt-smi and check the boards (tt-smi -s), or set device to the host's device type"}
				}
				if u.Runtime != units.RuntimeVllm {
					return failure(exitError, "unit %s runs on runtime %s, which needs no Tenstorrent host checks", u.Name, u.Runtime)
				}
				need = host.NeedOf(u)
				out.Unit, out.Model, out.Device, out.Enforced = u.Name, u.Model, u.Device, host.Enforced(u)
				out.Catalog = catalog.ModeProd
				if u.Catalog == catalog.ModeDev {
					out.Catalog = catalog.ModeDev
				}
			}
			out.Report = host.Run(c.Context, host.Env{Root: c.String("root")}, need)
			if deviceCheck != nil {
				out.Checks = append([]host.Check{*deviceCheck}, out.Checks...)
				out.Ready = false
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printDoctor(c, out)
			}
			if !out.Ready {
				return cli.Exit("", exitNotReady)
			}
			return nil
		},
	}
}

func printDoctor(c *cli.Context, out doctorOutput) {
	w := safeWriter{c.App.Writer}
	if out.Unit != "" {
		fmt.Fprintf(w, "unit %s: %s on %s (%s catalog)\n", out.Unit, out.Model, out.Device, out.Catalog)
	}
	for _, ch := range out.Checks {
		fmt.Fprintf(w, "%-4s  %-9s %s\n", strings.ToUpper(string(ch.Status)), ch.Name, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(w, "      %-9s fix: %s\n", "", ch.Fix)
		}
	}
	switch {
	case out.Ready:
		fmt.Fprintln(w, "ready")
	case out.Unit == "":
		fmt.Fprintln(w, "not ready: a Tenstorrent unit's start is blocked here until the failed checks pass")
	case out.Enforced:
		fmt.Fprintln(w, "not ready: a start of this unit is blocked until the failed checks pass")
	default:
		fmt.Fprintln(w, "not ready: the unit starts anyway ([vllm] host_checks = \"warn\")")
	}
}
