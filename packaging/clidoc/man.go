package clidoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Page is a man page: a title line, then sections.
type Page struct {
	Name    string // "ttisctl"
	Section int    // 1 commands, 5 file formats, 8 daemons
	// Source is the footer's left part: "ttis v1.2.3".
	Source string
	// Summary is the NAME line after the dash.
	Summary  string
	Synopsis []string
	Sections []Section
}

// Section is a .SH heading and its blocks.
type Section struct {
	Title  string
	Blocks []Block
}

// Block is one of: a paragraph (Text), a tagged paragraph (Tag and Text:
// an option, a key, a file), a literal block (Literal: examples, kept
// line by line) or a subsection heading (Sub).
type Block struct {
	Sub     string
	Tag     string
	Text    string
	Literal bool
}

// Man renders app's tree as page p: NAME, SYNOPSIS and DESCRIPTION (the
// app's, unless p has one), OPTIONS, COMMANDS and ENVIRONMENT from the
// tree, then p's other sections.
func Man(app *cli.App, p Page) []byte {
	t := walk(app)
	if p.Name == "" {
		p.Name = app.Name
	}
	if p.Summary == "" {
		p.Summary = app.Usage
	}
	if len(p.Synopsis) == 0 {
		p.Synopsis = []string{synopsis(p.Name, t)}
	}
	var head []Section
	if !hasSection(p.Sections, "DESCRIPTION") && app.Description != "" {
		head = append(head, Section{Title: "DESCRIPTION", Blocks: paragraphs(app.Description)})
	}
	if len(t.flags) > 0 {
		head = append(head, Section{Title: "OPTIONS", Blocks: flagBlocks(t.flags)})
	}
	if len(t.subs) > 0 {
		var bs []Block
		for _, c := range t.all()[1:] {
			bs = append(bs, Block{Sub: synopsis(p.Name, c)})
			if c.usage != "" {
				bs = append(bs, Block{Text: upperFirst(c.usage) + "."})
			}
			if c.description != "" {
				bs = append(bs, paragraphs(c.description)...)
			}
			if len(c.names) > 1 {
				bs = append(bs, Block{Text: "Also: " + strings.Join(c.names[1:], ", ") + "."})
			}
			bs = append(bs, flagBlocks(c.flags)...)
		}
		head = append(head, Section{Title: "COMMANDS", Blocks: bs})
	}
	if env := t.envVars(); len(env) > 0 && !hasSection(p.Sections, "ENVIRONMENT") {
		var bs []Block
		for _, e := range env {
			bs = append(bs, Block{Tag: e[0], Text: "Default for " + e[1] + "."})
		}
		p.Sections = append(p.Sections, Section{Title: "ENVIRONMENT", Blocks: bs})
	}
	// DESCRIPTION given by the page goes first, the tree's sections after it.
	var desc []Section
	rest := p.Sections
	if i := indexSection(rest, "DESCRIPTION"); i >= 0 {
		desc = []Section{rest[i]}
		rest = append(append([]Section(nil), rest[:i]...), rest[i+1:]...)
	}
	p.Sections = append(append(desc, head...), orderTail(rest)...)
	return Render(p)
}

// orderTail puts the usual closing sections in man-pages(7) order.
func orderTail(ss []Section) []Section {
	order := []string{"ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"}
	rank := func(s Section) int {
		for i, t := range order {
			if s.Title == t {
				return i + 1
			}
		}
		return 0
	}
	out := append([]Section(nil), ss...)
	// Stable insertion sort: few sections.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && rank(out[j]) < rank(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func hasSection(ss []Section, title string) bool { return indexSection(ss, title) >= 0 }

func indexSection(ss []Section, title string) int {
	for i, s := range ss {
		if s.Title == title {
			return i
		}
	}
	return -1
}

func synopsis(prog string, n *node) string {
	parts := []string{prog}
	if len(n.path) > 0 {
		parts = append(parts, n.path...)
	}
	if len(n.flags) > 0 {
		parts = append(parts, "[options]")
	}
	if len(n.subs) > 0 {
		parts = append(parts, "command")
	}
	if n.argsUsage != "" {
		parts = append(parts, n.argsUsage)
	}
	return strings.Join(parts, " ")
}

func flagBlocks(fs []flagDoc) []Block {
	var out []Block
	for _, f := range fs {
		tag := strings.Join(f.spellings(), ", ")
		if f.takesValue {
			tag += " " + f.placeholder
		}
		text := upperFirst(f.usage)
		if text != "" && !strings.HasSuffix(text, ".") {
			text += "."
		}
		if f.def != "" {
			text += " Default: " + f.def + "."
		}
		if len(f.env) > 0 {
			text += " Environment: " + strings.Join(f.env, ", ") + "."
		}
		out = append(out, Block{Tag: tag, Text: strings.TrimSpace(text)})
	}
	return out
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// paragraphs splits text at blank lines; indented lines form literal
// blocks.
func paragraphs(text string) []Block {
	var out []Block
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		lit := true
		for _, l := range strings.Split(p, "\n") {
			if !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "\t") {
				lit = false
			}
		}
		out = append(out, Block{Text: p, Literal: lit})
	}
	return out
}

// Render writes p as roff for man(7).
func Render(p Page) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, ".TH %s %d \"\" %s \"ttis manual\"\n", quote(strings.ToUpper(p.Name)), p.Section, quote(p.Source))
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", escape(p.Name), escape(p.Summary))
	if len(p.Synopsis) > 0 {
		b.WriteString(".SH SYNOPSIS\n")
		for i, s := range p.Synopsis {
			if i > 0 {
				b.WriteString(".br\n")
			}
			fmt.Fprintf(&b, ".B %s\n", escape(s))
		}
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, ".SH %s\n", quote(s.Title))
		for _, bl := range s.Blocks {
			switch {
			case bl.Sub != "":
				fmt.Fprintf(&b, ".SS %s\n", quote(bl.Sub))
			case bl.Literal:
				b.WriteString(".PP\n.RS 4\n.nf\n")
				for _, l := range strings.Split(strings.TrimRight(bl.Text, "\n"), "\n") {
					b.WriteString(escape(strings.TrimPrefix(strings.TrimPrefix(l, "  "), "\t")) + "\n")
				}
				b.WriteString(".fi\n.RE\n")
			case bl.Tag != "":
				fmt.Fprintf(&b, ".TP\n.B %s\n", escape(bl.Tag))
				writeText(&b, bl.Text)
			default:
				b.WriteString(".PP\n")
				writeText(&b, bl.Text)
			}
		}
	}
	return b.Bytes()
}

func writeText(b *bytes.Buffer, text string) {
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			b.WriteString(".sp\n")
			continue
		}
		b.WriteString(escape(l) + "\n")
	}
}

// escape makes text safe as roff input: backslashes, a leading dot or
// quote that would start a request, and "-" written as the ASCII minus
// (\-), so that "--output" copied from the page works in a shell.
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// quote makes s one argument of a roff request.
func quote(s string) string {
	return `"` + strings.ReplaceAll(escape(s), `"`, `\(dq`) + `"`
}
