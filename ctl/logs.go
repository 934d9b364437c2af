package ctl

import (
	"encoding/json"
	"fmt"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/urfave/cli/v2"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:         "logs",
		BashComplete: completeUnits,
		Usage:        "print a unit's recent server output and supervisor events",
		ArgsUsage:    "UNIT",
		Description:  "With --output json, one JSON object per line.\n" + exitCodesHelp,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until interrupted"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 100, Usage: "how many recent lines to print first (0: all kept)"},
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			if c.Int("lines") < 0 {
				return usageError(c, "--lines must not be negative")
			}
			w := c.App.Writer
			enc := json.NewEncoder(w)
			err = newClient(c).Logs(c.Context, args[0], c.Int("lines"), c.Bool("follow"), func(l api.LogLine) error {
				if asJSON {
					return enc.Encode(l)
				}
				_, err := fmt.Fprintln(w, logLineText(l))
				return err
			})
			if err != nil && c.Context.Err() == nil {
				return daemonError(err)
			}
			return nil
		},
	}
}

func devicesCommand() *cli.Command {
	return &cli.Command{
		Name:        "devices",
		Usage:       "list the host's accelerator chips and the units that claim them",
		Description: exitCodesHelp,
		Action: func(c *cli.Context) error {
			if _, err := positional(c, 0, 0); err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			devs, err := newClient(c).Devices(c.Context)
			if err != nil {
				return daemonError(err)
			}
			if asJSON {
				return writeJSON(c.App.Writer, devs)
			}
			printDevices(c, devs)
			if devs.Error != "" {
				return cli.Exit(devs.Error, exitError)
			}
			return nil
		},
	}
}

func printDevices(c *cli.Context, devs api.Devices) {
	w := c.App.Writer
	if len(devs.Chips) == 0 {
		fmt.Fprintf(w, "no chips under %s\n", devs.Root)
		return
	}
	fmt.Fprintf(w, "%-6s %-28s %-8s %s\n", "CHIP", "PATH", "PRESENT", "HOLDER")
	for _, ch := range devs.Chips {
		present := "yes"
		if !ch.Present {
			present = "MISSING"
		}
		fmt.Fprintf(w, "%-6d %-28s %-8s %s\n", ch.ID, dash(safe(ch.Path)), present, dash(safe(ch.Holder)))
	}
}
