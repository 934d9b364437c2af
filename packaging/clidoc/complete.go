package clidoc

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// The scripts complete from tables generated out of the tree: the
// subcommands and flags at each command path, which flags take a value,
// which commands take files, and which ask the program for their
// arguments (ttisctl asks ttisd for unit names with urfave/cli's
// --generate-bash-completion). The command path is found by skipping
// flags, and the values of flags that take one, wherever they stand, so
// flags after arguments complete too.

var identRE = regexp.MustCompile(`[^A-Za-z0-9_]`)

// fn is the shell function prefix for program prog.
func fn(prog string) string { return "_" + identRE.ReplaceAllString(prog, "_") }

// shellQuote quotes s for sh, bash, zsh and fish alike (single quotes).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish, where \' escapes a quote inside quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func valueFlags(n *node) []string {
	var out []string
	for _, f := range n.flags {
		if f.takesValue {
			out = append(out, f.spellings()...)
		}
	}
	return out
}

func allFlags(n *node) []string {
	var out []string
	for _, f := range n.flags {
		out = append(out, f.spellings()...)
	}
	return out
}

// caseTable writes a sh "case" over command paths, one arm per node
// whose value is not empty.
func caseTable(b *bytes.Buffer, nodes []*node, value func(*node) string) {
	b.WriteString("\tcase \"$1\" in\n")
	for _, n := range nodes {
		if v := value(n); v != "" {
			fmt.Fprintf(b, "\t%s) %s ;;\n", shellQuote(n.key()), v)
		}
	}
	b.WriteString("\tesac\n")
}

func words(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	return "echo " + shellQuote(strings.Join(ws, " "))
}

// shTables writes the functions both bash and zsh use:
// PREFIX_subs PATH, PREFIX_flags PATH, PREFIX_valued PATH FLAG,
// PREFIX_sub PATH WORD (the canonical name of a subcommand word),
// PREFIX_dynamic PATH and PREFIX_files PATH.
func shTables(b *bytes.Buffer, p string, t *node) {
	nodes := t.all()
	fmt.Fprintf(b, "%s_subs() {\n", p)
	caseTable(b, nodes, func(n *node) string { return words(n.subNames()) })
	b.WriteString("}\n")
	fmt.Fprintf(b, "%s_flags() {\n", p)
	caseTable(b, nodes, func(n *node) string { return words(allFlags(n)) })
	b.WriteString("}\n")
	fmt.Fprintf(b, "%s_valued() {\n\tcase \"${1:+$1 }$2\" in\n", p)
	for _, n := range nodes {
		for _, f := range valueFlags(n) {
			fmt.Fprintf(b, "\t%s) return 0 ;;\n", shellQuote(strings.TrimSpace(n.key()+" "+f)))
		}
	}
	b.WriteString("\tesac\n\treturn 1\n}\n")
	// PREFIX_choices PATH FLAG prints the values of a flag that has a
	// fixed set, nothing for one whose value is a file or free text.
	fmt.Fprintf(b, "%s_choices() {\n\tcase \"${1:+$1 }$2\" in\n", p)
	for _, n := range nodes {
		for _, f := range n.flags {
			if len(f.choices) == 0 {
				continue
			}
			for _, sp := range f.spellings() {
				fmt.Fprintf(b, "\t%s) %s ;;\n", shellQuote(strings.TrimSpace(n.key()+" "+sp)), words(f.choices))
			}
		}
	}
	b.WriteString("\tesac\n}\n")
	fmt.Fprintf(b, "%s_sub() {\n\tcase \"${1:+$1 }$2\" in\n", p)
	for _, n := range nodes {
		for _, s := range n.subs {
			for _, name := range s.names {
				fmt.Fprintf(b, "\t%s) echo %s ;;\n", shellQuote(strings.TrimSpace(n.key()+" "+name)), shellQuote(s.names[0]))
			}
		}
	}
	b.WriteString("\tesac\n}\n")
	// PREFIX_path WORD... prints the command path of the words before the
	// cursor (the program name left out).
	fmt.Fprintf(b, `%[1]s_path() {
	local cmdpath="" skip="" w sub
	for w in "$@"; do
		if [ -n "$skip" ]; then
			skip=""
			continue
		fi
		case "$w" in
		--) break ;;
		-*=*) ;;
		-*) if %[1]s_valued "$cmdpath" "$w"; then skip=1; fi ;;
		*) sub="$(%[1]s_sub "$cmdpath" "$w")"
			if [ -n "$sub" ]; then cmdpath="${cmdpath:+$cmdpath }$sub"; fi ;;
		esac
	done
	printf '%%s' "$cmdpath"
}
`, p)
	for _, kind := range []struct {
		name string
		pick func(*node) bool
	}{{"dynamic", func(n *node) bool { return n.dynamic }}, {"files", func(n *node) bool { return n.files }}} {
		fmt.Fprintf(b, "%s_%s() {\n\tcase \"$1\" in\n", p, kind.name)
		for _, n := range nodes {
			if kind.pick(n) {
				fmt.Fprintf(b, "\t%s) return 0 ;;\n", shellQuote(n.key()))
			}
		}
		b.WriteString("\tesac\n\treturn 1\n}\n")
	}
}

// Bash returns a bash completion script for app (install as
// /usr/share/bash-completion/completions/NAME).
func Bash(app *cli.App) []byte {
	t := walk(app)
	p := fn(app.Name)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# bash completion for %s; generated from its command tree, do not edit.\n", app.Name)
	shTables(&b, p, t)
	fmt.Fprintf(&b, `%[1]s() {
	local cur="${COMP_WORDS[COMP_CWORD]}" cmdpath
	cmdpath="$(%[1]s_path "${COMP_WORDS[@]:1:COMP_CWORD-1}")"
	local prev="${COMP_WORDS[COMP_CWORD-1]}"
	if ((COMP_CWORD > 1)) && %[1]s_valued "$cmdpath" "$prev"; then
		local vals
		vals="$(%[1]s_choices "$cmdpath" "$prev")"
		if [ -n "$vals" ]; then
			COMPREPLY=($(compgen -W "$vals" -- "$cur"))
			return
		fi
		compopt -o default 2>/dev/null
		COMPREPLY=()
		return
	fi
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "$(%[1]s_flags "$cmdpath")" -- "$cur"))
		return
	fi
	local cands
	cands="$(%[1]s_subs "$cmdpath")"
	if %[1]s_dynamic "$cmdpath"; then
		cands="$cands $("${COMP_WORDS[0]}" $cmdpath --generate-bash-completion 2>/dev/null)"
	fi
	COMPREPLY=($(compgen -W "$cands" -- "$cur"))
	if %[1]s_files "$cmdpath"; then
		compopt -o default 2>/dev/null
	fi
}
complete -F %[1]s %[2]s
`, p, app.Name)
	return b.Bytes()
}

// Zsh returns a zsh completion script for app (install as
// /usr/share/zsh/vendor-completions/_NAME).
func Zsh(app *cli.App) []byte {
	t := walk(app)
	p := fn(app.Name)
	var b bytes.Buffer
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s; generated from its command tree, do not edit.\n", app.Name, app.Name)
	shTables(&b, p, t)
	// Descriptions for _describe: "name:usage" per subcommand and flag.
	fmt.Fprintf(&b, "%s_described() {\n\tcase \"$1\" in\n", p)
	for _, n := range t.all() {
		var items []string
		for _, s := range n.subs {
			for _, name := range s.names {
				items = append(items, shellQuote(name+":"+strings.ReplaceAll(s.usage, ":", `\:`)))
			}
		}
		for _, f := range n.flags {
			for _, sp := range f.spellings() {
				items = append(items, shellQuote(sp+":"+strings.ReplaceAll(f.usage, ":", `\:`)))
			}
		}
		if len(items) > 0 {
			fmt.Fprintf(&b, "\t%s) reply=(%s) ;;\n", shellQuote(n.key()), strings.Join(items, " "))
		}
	}
	b.WriteString("\t*) reply=() ;;\n\tesac\n}\n")
	fmt.Fprintf(&b, `%[1]s() {
	local cmdpath
	cmdpath="$(%[1]s_path "${(@)words[2,CURRENT-1]}")"
	if ((CURRENT > 2)) && %[1]s_valued "$cmdpath" "${words[CURRENT-1]}"; then
		local -a vals
		vals=(${=$(%[1]s_choices "$cmdpath" "${words[CURRENT-1]}")})
		if ((${#vals})); then
			compadd -a vals
			return
		fi
		_files
		return
	fi
	local -a reply subs flags
	%[1]s_described "$cmdpath"
	subs=(${reply:#-*})
	flags=(${(M)reply:#-*})
	if [[ "$PREFIX" == -* ]]; then
		_describe -t options option flags
		return
	fi
	local ret=1
	_describe -t commands command subs && ret=0
	if %[1]s_dynamic "$cmdpath"; then
		local -a dyn
		dyn=(${(f)"$(${words[1]} ${(z)cmdpath} --generate-bash-completion 2>/dev/null)"})
		compadd -a dyn && ret=0
	fi
	if %[1]s_files "$cmdpath"; then
		_files && ret=0
	fi
	return ret
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
	%[1]s "$@"
else
	compdef %[1]s %[2]s
fi
`, p, app.Name)
	return b.Bytes()
}

// Fish returns a fish completion script for app (install as
// /usr/share/fish/vendor_completions.d/NAME.fish).
func Fish(app *cli.App) []byte {
	t := walk(app)
	p := fn(app.Name)
	nodes := t.all()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# fish completion for %s; generated from its command tree, do not edit.\n", app.Name)
	fmt.Fprintf(&b, "function %s_valued\n\tswitch (string trim -- \"$argv[1] $argv[2]\")\n", p)
	for _, n := range nodes {
		for _, f := range valueFlags(n) {
			fmt.Fprintf(&b, "\tcase %s\n\t\treturn 0\n", fishQuote(strings.TrimSpace(n.key()+" "+f)))
		}
	}
	b.WriteString("\tend\n\treturn 1\nend\n")
	fmt.Fprintf(&b, "function %s_sub\n\tswitch (string trim -- \"$argv[1] $argv[2]\")\n", p)
	for _, n := range nodes {
		for _, s := range n.subs {
			for _, name := range s.names {
				fmt.Fprintf(&b, "\tcase %s\n\t\techo %s\n", fishQuote(strings.TrimSpace(n.key()+" "+name)), fishQuote(s.names[0]))
			}
		}
	}
	b.WriteString("\tend\nend\n")
	// PREFIX_path prints the command path of the command line so far.
	fmt.Fprintf(&b, `function %[1]s_path
	set -l toks (commandline -opc)
	set -e toks[1]
	set -l cmdpath ""
	set -l skip 0
	for w in $toks
		if test $skip = 1
			set skip 0
			continue
		end
		switch $w
			case --
				break
			case '-*=*'
			case '-*'
				if %[1]s_valued "$cmdpath" $w
					set skip 1
				end
			case '*'
				set -l sub (%[1]s_sub "$cmdpath" $w)
				if test -n "$sub"
					set cmdpath (string trim -- "$cmdpath $sub")
				end
		end
	end
	echo $cmdpath
end
function %[1]s_at
	test (%[1]s_path) = "$argv[1]"
end
complete -c %[2]s -f
`, p, app.Name)
	for _, n := range nodes {
		cond := fishQuote(p + "_at " + fishQuote(n.key()))
		for _, s := range n.subs {
			for _, name := range s.names {
				fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", app.Name, cond, fishQuote(name), fishQuote(s.usage))
			}
		}
		for _, f := range n.flags {
			var opts []string
			for _, name := range f.names {
				if len(name) == 1 {
					opts = append(opts, "-s "+fishQuote(name))
				} else {
					opts = append(opts, "-l "+fishQuote(name))
				}
			}
			switch {
			case len(f.choices) > 0:
				opts = append(opts, "-x -a "+fishQuote(strings.Join(f.choices, " ")))
			case f.takesValue:
				opts = append(opts, "-r -F")
			}
			fmt.Fprintf(&b, "complete -c %s -n %s %s -d %s\n", app.Name, cond, strings.Join(opts, " "), fishQuote(f.usage))
		}
		if n.dynamic {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s\n", app.Name, cond, fishQuote("("+app.Name+" "+n.key()+" --generate-bash-completion 2>/dev/null)"))
		}
		if n.files {
			fmt.Fprintf(&b, "complete -c %s -n %s -F\n", app.Name, cond)
		}
	}
	return b.Bytes()
}
