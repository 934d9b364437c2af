package ctl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/api"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show units: a table of all, or details and recent log lines of the named units",
		ArgsUsage: "[UNIT...]",
		Description: "Without arguments: one line per unit. With units: a systemctl-like block per unit.\n" +
			"Exit status with units: 0 all active, 3 one is not active, 4 one does not exist.\n" + exitCodesHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 10, Usage: "log lines shown per unit"},
		},
		Action:       runStatus,
		BashComplete: completeUnits,
	}
}

func runStatus(c *cli.Context) error {
	names, err := positional(c, 0, -1)
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl := newClient(c)
	out := c.App.Writer
	if len(names) == 0 {
		list, err := cl.Units(c.Context)
		if err != nil {
			return daemonError(err)
		}
		if asJSON {
			return writeJSON(out, list)
		}
		printTable(out, list, time.Now())
		return nil
	}
	var details []api.UnitDetail
	var missing []string
	for _, n := range names {
		d, err := cl.Unit(c.Context, n, c.Int("lines"))
		if err != nil {
			if e := daemonError(err); e.(cli.ExitCoder).ExitCode() == exitNoUnit {
				missing = append(missing, n)
				continue
			}
			return daemonError(err)
		}
		details = append(details, d)
	}
	if asJSON {
		if err := writeJSON(out, details); err != nil {
			return err
		}
	} else {
		for i, d := range details {
			if i > 0 {
				fmt.Fprintln(out)
			}
			printDetail(out, d, time.Now())
		}
	}
	if len(missing) > 0 {
		return failure(exitNoUnit, "unit %s not found", safe(strings.Join(missing, ", ")))
	}
	for _, d := range details {
		if d.State != api.StateActive {
			return cli.Exit("", exitNotActive)
		}
	}
	return nil
}

// printTable writes one line per unit, kubectl style: upper-case headers,
// no borders, "-" for empty cells.
func printTable(w io.Writer, list api.UnitList, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tSTATE\tSUB\tMODEL\tDEVICE\tRUNTIME\tLISTEN\tPID\tRESTARTS\tSINCE\tLAST ERROR")
	for _, u := range list.Units {
		pid := "-"
		if u.PID > 0 {
			pid = fmt.Sprint(u.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			safe(u.Name), u.State, u.SubState, dash(safe(u.Model)), dash(safe(deviceText(u))), dash(safe(u.Runtime)), dash(safe(u.Listen)),
			pid, u.Restarts, age(u.Since, now), dash(truncate(safe(u.LastError), 80)))
	}
	tw.Flush()
	for _, e := range list.Errors {
		fmt.Fprintln(w, "error:", safe(e))
	}
	if len(list.Units) == 0 && len(list.Errors) == 0 {
		fmt.Fprintln(w, "no units")
	}
}

// printDetail writes a unit the way "systemctl status" does.
func printDetail(w io.Writer, d api.UnitDetail, now time.Time) {
	title := d.Description
	if title == "" {
		title = d.Model
	}
	if title != "" {
		title = " - " + title
	}
	fmt.Fprintf(w, "%s %s%s\n", glyph(d.State), safe(d.Name), safe(title))
	// Every value may come from a unit file or a server: one escaped line
	// each.
	row := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%12s: %s\n", label, safe(fmt.Sprintf(format, a...)))
	}
	switch d.LoadState {
	case api.LoadError:
		row("Loaded", "error (%s)", d.Path)
	default:
		row("Loaded", "%s (%s; hash %s)", d.LoadState, d.Path, shortHash(d.Hash))
	}
	if d.Detail != "" {
		fmt.Fprintf(w, "%12s  %s\n", "", safe(d.Detail))
	}
	if c := d.Pending; c != nil {
		row("Pending", "%s", changeText(c))
	}
	if c := d.LastChange; c != nil {
		row("Last edit", "%s, %s ago", changeText(c), age(c.At, now))
	}
	active := fmt.Sprintf("%s (%s)", d.State, d.SubState)
	if d.Result != "" && d.Result != api.ResultSuccess {
		active += fmt.Sprintf(" (Result: %s)", d.Result)
	}
	if !d.Since.IsZero() {
		active += fmt.Sprintf(" since %s; %s ago", d.Since.In(now.Location()).Format("Mon 2006-01-02 15:04:05 MST"), age(d.Since, now))
	}
	row("Active", "%s", active)
	if d.PID > 0 && d.Adopted {
		row("Main PID", "%d (adopted: started by an earlier ttisd)", d.PID)
	} else if d.PID > 0 {
		row("Main PID", "%d", d.PID)
	}
	if d.MemoryBytes > 0 {
		row("Memory", "%s", memoryText(d.MemoryBytes))
	}
	if d.Model != "" {
		row("Model", "%s", d.Model)
		row("Device", "%s (runtime %s)", deviceText(d.Unit), dash(d.Runtime))
		row("Listen", "%s (auth %s)", d.Listen, dash(d.AuthMode))
	}
	row("Restarts", "%d", d.Restarts)
	if d.Workers != "" {
		// A media server restarts its device workers itself.
		row("Workers", "%s", d.Workers)
	}
	if d.LastExit != "" {
		row("Last exit", "%s", d.LastExit)
	}
	if d.LastError != "" {
		row("Error", "%s", d.LastError)
	}
	for i, sc := range d.Schedules {
		text := fmt.Sprintf("%s (%s, limit %s), next %s", sc.Workflow, sc.Calendar, sc.Limit, sc.Next.In(now.Location()).Format("Mon 2006-01-02 15:04 MST"))
		if sc.Running {
			text += "; running"
		} else if sc.LastResult != "" {
			text += "; last " + sc.LastResult
		}
		if i == 0 {
			row("Schedules", "%s", text)
		} else {
			fmt.Fprintf(w, "%12s  %s\n", "", safe(text))
		}
	}
	if len(d.Logs) > 0 {
		fmt.Fprintln(w)
		for _, l := range d.Logs {
			fmt.Fprintln(w, logLineTextIn(l, now.Location()))
		}
	}
}

// changeText says what an edit of the unit file does, or did.
func changeText(c *api.Change) string {
	what := map[string]string{
		api.ChangeKeep:    "nothing to do (comments or formatting)",
		api.ChangeRetune:  "daemon-side only; server untouched",
		api.ChangeReload:  "live reload (SIGHUP); server kept",
		api.ChangeRestart: "server restart",
		api.ChangeStart:   "start",
		api.ChangeStop:    "stop",
		api.ChangeInvalid: "invalid; the running version stays",
	}[c.Action]
	if what == "" {
		what = c.Action
	}
	if len(c.Fields) > 0 {
		what += " [" + strings.Join(c.Fields, ", ") + "]"
	}
	if c.Error != "" {
		what += ": " + c.Error
	}
	return what
}

func glyph(state string) string {
	switch state {
	case api.StateActive:
		return "●"
	case api.StateFailed:
		return "×"
	case api.StateActivating, api.StateDeactivating:
		return "◌"
	}
	return "○"
}

func deviceText(u api.Unit) string {
	if len(u.Chips) == 0 {
		return u.Device
	}
	ids := make([]string, len(u.Chips))
	for i, c := range u.Chips {
		ids[i] = fmt.Sprint(c)
	}
	return u.Device + ":" + strings.Join(ids, ",")
}

// age formats a duration like kubectl: 45s, 12m, 3h, 2d.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return dash(h)
}

func logLineText(l api.LogLine) string { return logLineTextIn(l, time.Local) }

// logLineTextIn formats a log line journalctl-style in loc.
func logLineTextIn(l api.LogLine, loc *time.Location) string {
	return fmt.Sprintf("%s [%s] %s", l.Time.In(loc).Format("Jan 02 15:04:05"), safe(l.Stream), safe(l.Text))
}

// memoryText formats a size like systemctl: 512K, 17.2M, 1.5G.
func memoryText(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.1fG", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1fM", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%dK", n/k)
	}
	return fmt.Sprintf("%dB", n)
}
