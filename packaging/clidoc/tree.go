// Package clidoc renders a urfave/cli command tree as a man page and as
// bash, zsh and fish completion scripts. The tree is the live one the
// binary runs (ctl.App, ttisd's app), walked when the package is built, so
// the documentation cannot drift from the flags.
package clidoc

import (
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// node is one command of the tree as docs and completions see it.
type node struct {
	// path is the command words after the program name ("model create").
	path        []string
	names       []string // the command's name and aliases; empty for the root
	usage       string
	description string
	argsUsage   string
	flags       []flagDoc
	subs        []*node
	// dynamic: the command completes its arguments itself (a BashComplete
	// function behind --generate-bash-completion, e.g. unit names).
	dynamic bool
	// files: the arguments are files or folders.
	files bool
}

type flagDoc struct {
	names       []string // "output", "o"
	takesValue  bool
	placeholder string
	usage       string
	def         string
	env         []string
	// choices are the values the flag takes, completed in place of file
	// names (a flag that declares them: Choices() []string).
	choices []string
}

// Chooser is a flag with a fixed set of values, which the completion
// scripts offer for it (ttisctl's -o, --limit).
type Chooser interface {
	Choices() []string
}

// spellings are the flag's names as typed: "--output", "-o".
func (f flagDoc) spellings() []string {
	out := make([]string, len(f.names))
	for i, n := range f.names {
		if len(n) == 1 {
			out[i] = "-" + n
		} else {
			out[i] = "--" + n
		}
	}
	return out
}

// walk builds the tree of app. Hidden commands and flags are left out;
// the help and version flags urfave/cli adds at run time are put in.
func walk(app *cli.App) *node {
	root := &node{
		usage:       app.Usage,
		description: app.Description,
		argsUsage:   app.ArgsUsage,
		flags:       flagDocs(app.Flags),
		dynamic:     app.EnableBashCompletion && app.BashComplete != nil,
	}
	if !app.HideHelp {
		root.flags = withFlag(root.flags, flagDoc{names: []string{"help", "h"}, usage: "show help"})
	}
	if !app.HideVersion && app.Version != "" {
		root.flags = withFlag(root.flags, flagDoc{names: []string{"version", "v"}, usage: "print the version"})
	}
	root.files = mentionsFiles(root.argsUsage)
	root.subs = walkCommands(app, app.Commands, nil)
	return root
}

func walkCommands(app *cli.App, cmds []*cli.Command, parent []string) []*node {
	var out []*node
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		path := append(append([]string(nil), parent...), c.Name)
		n := &node{
			path:        path,
			names:       append([]string{c.Name}, c.Aliases...),
			usage:       c.Usage,
			description: c.Description,
			argsUsage:   c.ArgsUsage,
			flags:       flagDocs(c.Flags),
			dynamic:     app.EnableBashCompletion && c.BashComplete != nil,
			files:       mentionsFiles(c.ArgsUsage),
		}
		if !c.HideHelp {
			n.flags = withFlag(n.flags, flagDoc{names: []string{"help", "h"}, usage: "show help"})
		}
		n.subs = walkCommands(app, c.Subcommands, path)
		out = append(out, n)
	}
	return out
}

// withFlag appends f unless a flag of that name is there (urfave/cli
// adds help and version to a tree that has run).
func withFlag(fs []flagDoc, f flagDoc) []flagDoc {
	for _, g := range fs {
		if g.names[0] == f.names[0] {
			return fs
		}
	}
	return append(fs, f)
}

// mentionsFiles guesses from ARGS usage ("UNIT_FILE", "FILE…", "DIR")
// whether the arguments are paths, for file-name completion.
func mentionsFiles(argsUsage string) bool {
	u := strings.ToUpper(argsUsage)
	for _, w := range []string{"FILE", "DIR", "PATH", "GGUF"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

func flagDocs(flags []cli.Flag) []flagDoc {
	var out []flagDoc
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		d := flagDoc{names: f.Names()}
		if g, ok := f.(cli.DocGenerationFlag); ok {
			d.takesValue = g.TakesValue()
			d.placeholder, d.usage = unquoteUsage(g.GetUsage())
			d.env = g.GetEnvVars()
			if d.takesValue {
				d.def = g.GetDefaultText()
			}
		}
		if c, ok := f.(Chooser); ok && d.takesValue {
			d.choices = c.Choices()
		}
		if d.takesValue && d.placeholder == "" {
			d.placeholder = placeholder(f)
		}
		out = append(out, d)
	}
	return out
}

// placeholder names a flag's value by its type when the usage text has no
// `NAME` in backquotes.
func placeholder(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "DURATION"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag, *cli.Int64SliceFlag:
		return "N"
	case *cli.Float64Flag, *cli.Float64SliceFlag:
		return "NUMBER"
	case *cli.PathFlag:
		return "PATH"
	}
	return "VALUE"
}

// all lists the tree depth first, the root first.
func (n *node) all() []*node {
	out := []*node{n}
	for _, s := range n.subs {
		out = append(out, s.all()...)
	}
	return out
}

// key is the node's path as completion scripts match it ("model create").
func (n *node) key() string { return strings.Join(n.path, " ") }

// subNames lists the words that select a subcommand, aliases included.
func (n *node) subNames() []string {
	var out []string
	for _, s := range n.subs {
		out = append(out, s.names...)
	}
	return out
}

// envVars lists every environment variable a flag of the tree reads,
// sorted, with the flag that reads it.
func (n *node) envVars() [][2]string {
	seen := map[string]string{}
	for _, c := range n.all() {
		for _, f := range c.flags {
			for _, e := range f.env {
				if _, ok := seen[e]; !ok {
					seen[e] = strings.TrimSpace(strings.Join(append([]string{}, c.path...), " ") + " " + f.spellings()[0])
				}
			}
		}
	}
	out := make([][2]string, 0, len(seen))
	for e, f := range seen {
		out = append(out, [2]string{e, f})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// unquoteUsage takes the value's name from the first `backquoted` word of
// a usage text, as urfave/cli's help does, and returns the text without
// the quotes.
func unquoteUsage(usage string) (name, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name = usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}
