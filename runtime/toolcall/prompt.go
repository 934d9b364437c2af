package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/runtime"
)

// PythonJSON re-writes JSON text the way Python's json.dumps writes it in
// chat templates (transformers' tojson: ensure_ascii=False, keys in their
// order): ", " and ": " between items, or with indent > 0 one item a line.
// Invalid JSON is returned as it is.
func PythonJSON(raw []byte, indent int) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var sb strings.Builder
	if err := writePy(&sb, dec, indent, 0); err != nil {
		return string(raw)
	}
	return sb.String()
}

func writePy(sb *strings.Builder, dec *json.Decoder, indent, level int) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	newline := func(l int) {
		if indent > 0 {
			sb.WriteByte('\n')
			sb.WriteString(strings.Repeat(" ", indent*l))
		}
	}
	switch t := tok.(type) {
	case json.Delim:
		open, close := byte('['), byte(']')
		if t == '{' {
			open, close = '{', '}'
		}
		sb.WriteByte(open)
		n := 0
		for dec.More() {
			if n > 0 {
				sb.WriteByte(',')
				if indent == 0 {
					sb.WriteByte(' ')
				}
			}
			newline(level + 1)
			if open == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				sb.WriteString(PyString(kt.(string)))
				sb.WriteString(": ")
			}
			if err := writePy(sb, dec, indent, level+1); err != nil {
				return err
			}
			n++
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if n > 0 {
			newline(level)
		}
		sb.WriteByte(close)
	case string:
		sb.WriteString(PyString(t))
	case json.Number:
		sb.WriteString(PyNumber(t))
	case bool:
		sb.WriteString(strconv.FormatBool(t))
	case nil:
		sb.WriteString("null")
	}
	return nil
}

// PyString writes s as json.dumps(s, ensure_ascii=False) does.
func PyString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// PyNumber writes a JSON number as Python would after json.loads: integers
// as they are, floats in Python's repr.
func PyNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return s
	}
	return PyFloat(f)
}

// PyFloat is Python's repr of a float.
func PyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		if i := strings.IndexByte(s, 'e'); i > 0 && len(s[i+2:]) == 1 {
			s = s[:i+2] + "0" + s[i+2:] // Python writes two exponent digits
		}
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// ToolJSON is a tool as chat templates receive it (OpenAI's shape),
// written by PythonJSON.
func ToolJSON(t runtime.Tool, indent int) string {
	var sb strings.Builder
	sb.WriteString(`{"type":"function","function":{"name":`)
	sb.WriteString(PyString(t.Name))
	if t.Description != "" {
		sb.WriteString(`,"description":`)
		sb.WriteString(PyString(t.Description))
	}
	if len(t.Parameters) > 0 {
		sb.WriteString(`,"parameters":`)
		sb.Write(t.Parameters)
	}
	sb.WriteString("}}")
	return PythonJSON([]byte(sb.String()), indent)
}

// Generic tool prompting, for chat templates that do not present tools
// themselves: the tools are described in the system message in the hermes
// format (the one Qwen 2.5 uses), calls are written back as <tool_call>
// blocks and results given as <tool_response> blocks in a user turn, so
// the output is read with the hermes syntax.
const genericToolsIntro = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"

const genericToolsOutro = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

// GenericToolsText is the system-message text describing tools.
func GenericToolsText(tools []runtime.Tool) string {
	var sb strings.Builder
	sb.WriteString(genericToolsIntro)
	for _, t := range tools {
		sb.WriteByte('\n')
		sb.WriteString(ToolJSON(t, 0))
	}
	sb.WriteString(genericToolsOutro)
	return sb.String()
}

// CallText writes one call as a hermes <tool_call> block.
func CallText(c runtime.ToolCall) string {
	args := c.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	return "<tool_call>\n{\"name\": " + PyString(c.Name) + ", \"arguments\": " + PythonJSON([]byte(args), 0) + "}\n</tool_call>"
}

// GenericMessages rewrites a conversation with tools into plain system,
// user and assistant turns in the generic format.
func GenericMessages(messages []runtime.ChatMessage, tools []runtime.Tool) []runtime.ChatMessage {
	var out []runtime.ChatMessage
	if len(tools) > 0 {
		desc := GenericToolsText(tools)
		if len(messages) > 0 && messages[0].Role == "system" {
			out = append(out, runtime.ChatMessage{Role: "system", Content: messages[0].Content + "\n\n" + desc})
			messages = messages[1:]
		} else {
			out = append(out, runtime.ChatMessage{Role: "system", Content: desc})
		}
	}
	for _, m := range messages {
		switch {
		case m.Role == "tool":
			block := "<tool_response>\n" + m.Content + "\n</tool_response>"
			if n := len(out); n > 0 && out[n-1].Role == "user" && strings.HasSuffix(out[n-1].Content, "</tool_response>") {
				out[n-1].Content += "\n" + block
			} else {
				out = append(out, runtime.ChatMessage{Role: "user", Content: block})
			}
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			parts := []string{}
			if m.Content != "" {
				parts = append(parts, m.Content)
			}
			for _, c := range m.ToolCalls {
				parts = append(parts, CallText(c))
			}
			out = append(out, runtime.ChatMessage{Role: "assistant", Content: strings.Join(parts, "\n")})
		default:
			out = append(out, runtime.ChatMessage{Role: m.Role, Content: m.Content})
		}
	}
	return out
}
