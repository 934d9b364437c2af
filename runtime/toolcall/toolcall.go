// Package toolcall reads the tool calls in a model's output, as vLLM's tool
// parsers do: in the model's own syntax (hermes, llama3_json, mistral)
// when the model chooses (tool_choice "auto"), or in the plain JSON that
// constrained decoding produces for tool_choice "required" (an array of
// {"name", "parameters"} objects) and for a named function (its arguments
// object). A Parser works on text as it is generated, so streamed answers
// carry tool-call deltas; the whole output's calls come from Result.
package toolcall

import (
	"strings"

	"github.com/ttis-dev/ttis/runtime"
)

// Mode is what a sequence's output holds.
type Mode uint8

const (
	// Auto: the model's own syntax, with content around it, or content only.
	Auto Mode = iota
	// Required: a JSON array of {"name": …, "parameters": {…}} objects.
	Required
	// Named: the arguments object of one function.
	Named
)

// Delta is a change to the tool calls of a streamed output: the first of a
// call carries its name.
type Delta struct {
	Index     int
	Name      string
	Arguments string
}

// Call is one complete tool call.
type Call struct {
	Name string
	// Arguments is the JSON text of the arguments object.
	Arguments string
}

// The markers of the model syntaxes.
const (
	hermesOpen  = "<tool_call>"
	pythonTag   = "<|python_tag|>"
	mistralMark = "[TOOL_CALLS]"
)

type phase uint8

const (
	pContent     phase = iota // content, watching for the start of calls
	pStart                    // llama3_json: deciding between content and calls
	pCall                     // inside a call object
	pBetween                  // after a call, before the next (or the end)
	pContentOnly              // content to the end
	pBad                      // the calls did not parse; the rest is ignored
)

type callState struct {
	sc       *callScanner
	sentName bool
	sent     int
}

// Parser reads one sequence's output. Use it from one goroutine.
type Parser struct {
	mode    Mode
	syntax  runtime.ToolSyntax
	named   string
	argKeys []string

	ph      phase
	buf     string
	content strings.Builder
	raw     strings.Builder
	calls   []*callState
	array   bool // calls sit in a JSON array (mistral, required)
	opened  bool // the array's '[' was read
	closed  bool // the array's ']' was read
}

// NewParser returns a parser for an output in mode; syntax matters for
// Auto, name for Named.
func NewParser(mode Mode, syntax runtime.ToolSyntax, name string) *Parser {
	p := &Parser{mode: mode, syntax: syntax, named: name}
	switch mode {
	case Required:
		p.argKeys = []string{"parameters", "arguments"}
		p.array = true
		p.ph = pBetween
	case Named:
		p.calls = []*callState{{}}
	default:
		switch syntax {
		case runtime.ToolLlama3JSON:
			p.argKeys = []string{"parameters", "arguments"}
			p.ph = pStart
		case runtime.ToolMistral:
			p.argKeys = []string{"arguments", "parameters"}
			p.array = true
		default:
			p.argKeys = []string{"arguments", "parameters"}
		}
	}
	return p
}

// Feed takes the next piece of output and returns the content text and
// the tool-call deltas it settles.
func (p *Parser) Feed(text string) (string, []Delta) {
	p.raw.WriteString(text)
	if p.mode == Named {
		d := Delta{Index: 0, Arguments: text}
		if !p.calls[0].sentName {
			p.calls[0].sentName = true
			d.Name = p.named
		}
		if d.Name == "" && d.Arguments == "" {
			return "", nil
		}
		return "", []Delta{d}
	}
	p.buf += text
	var out strings.Builder
	p.run(&out, false)
	c := out.String()
	p.content.WriteString(c)
	return c, p.deltas()
}

// Finish ends the output and returns what Feed held back.
func (p *Parser) Finish() (string, []Delta) {
	if p.mode == Named {
		// An output that wrote no arguments object stands for "{}".
		c := p.calls[0]
		if strings.TrimSpace(p.raw.String()) != "" {
			return "", nil
		}
		d := Delta{Index: 0, Arguments: "{}"}
		if !c.sentName {
			c.sentName = true
			d.Name = p.named
		}
		return "", []Delta{d}
	}
	var out strings.Builder
	p.run(&out, true)
	c := out.String()
	p.content.WriteString(c)
	return c, p.deltas()
}

// openMarker is the text that starts calls in the syntax.
func (p *Parser) openMarker() string {
	if p.syntax == runtime.ToolMistral {
		return mistralMark
	}
	return hermesOpen
}

// run advances through p.buf; at the end (final) nothing is held back.
func (p *Parser) run(out *strings.Builder, final bool) {
	for range 1 << 20 { // bounded: each round consumes text or returns
		switch p.ph {
		case pContentOnly:
			out.WriteString(p.buf)
			p.buf = ""
			return
		case pBad:
			p.buf = ""
			return
		case pContent:
			mark := p.openMarker()
			if i := strings.Index(p.buf, mark); i >= 0 {
				out.WriteString(p.buf[:i])
				p.buf = p.buf[i+len(mark):]
				p.startCalls()
				continue
			}
			keep := 0
			if !final {
				keep = heldPrefix(p.buf, mark)
			}
			out.WriteString(p.buf[:len(p.buf)-keep])
			p.buf = p.buf[len(p.buf)-keep:]
			return
		case pStart:
			t := strings.TrimLeft(p.buf, " \t\n\r")
			switch {
			case strings.HasPrefix(t, pythonTag):
				p.buf = t[len(pythonTag):]
				p.ph = pBetween
			case strings.HasPrefix(t, "{"):
				p.buf = t
				p.ph = pBetween
			case t == "" || (strings.HasPrefix(pythonTag, t) && !final):
				if final {
					out.WriteString(p.buf)
					p.buf = ""
				}
				return
			default:
				p.ph = pContentOnly
			}
		case pCall:
			cur := p.calls[len(p.calls)-1]
			n := cur.sc.feed(p.buf)
			p.buf = p.buf[n:]
			if !cur.sc.done() {
				return
			}
			if cur.sc.bad {
				p.ph = pBad
				continue
			}
			p.ph = pBetween
		case pBetween:
			if !p.between(final) {
				return
			}
		}
	}
}

func (p *Parser) startCalls() {
	if p.array {
		p.ph = pBetween
		return
	}
	p.newCall()
}

func (p *Parser) newCall() {
	p.calls = append(p.calls, &callState{sc: newCallScanner(p.argKeys...)})
	p.ph = pCall
}

// between reads what comes between calls; it reports whether it moved on.
func (p *Parser) between(final bool) bool {
	t := strings.TrimLeft(p.buf, " \t\n\r")
	p.buf = t
	if t == "" {
		return false
	}
	switch {
	case p.array && !p.opened:
		switch t[0] {
		case '[':
			p.opened = true
			p.buf = t[1:]
		case '{': // a bare object where an array was expected
			p.opened, p.closed = true, true
			p.newCall()
		default:
			p.ph = pBad
		}
		return true
	case p.array && p.closed:
		p.buf = "" // text after the array is not content
		return false
	case p.array:
		switch t[0] {
		case ',':
			p.buf = t[1:]
		case ']':
			p.closed = true
			p.buf = t[1:]
		case '{':
			p.newCall()
		default:
			p.ph = pBad
		}
		return true
	case p.syntax == runtime.ToolLlama3JSON:
		switch t[0] {
		case ';':
			p.buf = t[1:]
		case '{':
			p.newCall()
		default:
			p.ph = pBad
		}
		return true
	}
	// hermes: skip to the next <tool_call>; text in between (the closing
	// tag included) is not content.
	if i := strings.Index(t, hermesOpen); i >= 0 {
		p.buf = t[i+len(hermesOpen):]
		p.newCall()
		return true
	}
	if !final {
		p.buf = t[len(t)-heldPrefix(t, hermesOpen):]
	} else {
		p.buf = ""
	}
	return false
}

// heldPrefix is the length of the longest end of s that begins mark.
func heldPrefix(s, mark string) int {
	for n := min(len(s), len(mark)-1); n > 0; n-- {
		if strings.HasPrefix(mark, s[len(s)-n:]) {
			return n
		}
	}
	return 0
}

// deltas reports what the calls gained since the last report.
func (p *Parser) deltas() []Delta {
	var out []Delta
	for i, c := range p.calls {
		if c.sc == nil || !c.sc.hasName {
			continue
		}
		args := c.sc.args.String()
		if c.sc.done() {
			args = c.sc.arguments()
		} else if !c.sc.argsDone {
			// Trailing blanks may yet turn out to follow the value.
			args = strings.TrimRight(args, " \t\n\r")
		}
		d := Delta{Index: i}
		if !c.sentName {
			c.sentName = true
			d.Name = c.sc.name
		}
		if len(args) > c.sent {
			d.Arguments = args[c.sent:]
			c.sent = len(args)
		}
		if d.Name != "" || d.Arguments != "" {
			out = append(out, d)
		}
	}
	return out
}

// Result returns the content and the calls of the whole output; call it
// after Finish. In Auto mode, calls that do not parse make the whole
// output content, as vLLM's parsers do.
func (p *Parser) Result() (string, []Call) {
	if p.mode == Named {
		args := strings.TrimSpace(p.raw.String())
		if args == "" {
			args = "{}"
		}
		return "", []Call{{Name: p.named, Arguments: args}}
	}
	var calls []Call
	ok := p.ph != pBad
	for _, c := range p.calls {
		if !c.sc.valid() {
			ok = false
			break
		}
		calls = append(calls, Call{Name: c.sc.name, Arguments: c.sc.arguments()})
	}
	if !ok || len(calls) == 0 {
		return p.raw.String(), nil
	}
	return p.content.String(), calls
}
