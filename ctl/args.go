package ctl

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorder moves every flag of a command line before the positional
// arguments of the command it belongs to, because urfave/cli v2 stops
// reading flags at the first positional argument while operators write
// them anywhere (systemctl, journalctl, kubectl and ollama accept
// `ttisctl status llama -o json`). "--" still ends the flags: everything
// after it stays positional, in order. A flag's value travels with it when
// the flag takes one and is not written as --flag=value. It also returns
// the command path ("model create") for error messages.
//
// A global flag (--socket, -o) written before the command moves to the
// command that runs, ahead of that command's own flags. Every command
// has its own copy of the global flags (inherit), and urfave/cli fills a
// copy from its environment variable when the command line leaves it
// unset: `TTIS_SOCKET=A ttisctl --socket B stop X` would otherwise read
// the stop command's copy, set from the environment, and act on A. On the
// command that runs, the command line beats the environment, and a flag
// written twice takes its last value.
func reorder(app *cli.App, args []string) (out []string, path []string) {
	if len(args) == 0 {
		return args, nil
	}
	out = []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	rest := args[1:]
	// Global flags seen before the command that runs, in order.
	var carried []string
	for {
		var fl, pos []string
		var sub *cli.Command
		i := 0
	scan:
		for ; i < len(rest); i++ {
			a := rest[i]
			switch {
			case a == "--":
				pos = append(pos, rest[i:]...)
				i = len(rest)
				break scan
			case strings.HasPrefix(a, "-") && a != "-":
				f := []string{a}
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if !strings.Contains(a, "=") && takesValue(flags, name) && i+1 < len(rest) {
					i++
					f = append(f, rest[i])
				}
				if isGlobal(name) {
					carried = append(carried, f...)
				} else {
					fl = append(fl, f...)
				}
			case len(pos) == 0 && len(cmds) > 0:
				if sub = findCommand(cmds, a); sub != nil {
					i++
					break scan
				}
				// Not a command: leave the rest as written, for the
				// parser's "unknown command".
				return append(append(append(out, carried...), fl...), rest[i:]...), path
			default:
				pos = append(pos, a)
			}
		}
		if sub == nil {
			// The command that runs: its global flags first (the later
			// of two wins), then its own, then its arguments.
			return append(append(append(out, carried...), fl...), pos...), path
		}
		out = append(out, fl...)
		out = append(out, sub.Name)
		path = append(path, sub.Name)
		flags, cmds, rest = sub.Flags, sub.Subcommands, rest[i:]
	}
}

// isGlobal reports whether name is one of the global flags.
func isGlobal(name string) bool {
	for _, f := range globalFlags() {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the named flag reads the next argument as its
// value (every flag type but booleans). Unknown flags take none; the
// parser reports them.
func takesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if v, ok := f.(cli.DocGenerationFlag); ok {
			return v.TakesValue()
		}
		return true
	}
	return false
}
