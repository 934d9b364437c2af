package container

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PythonJSON writes v as Python's json.dumps does with its defaults
// (", " and ": " separators, non-ASCII escaped), so that a value run.py
// would send as text is byte-for-byte the same. Map keys are sorted: a TOML
// table or a decoded JSON object has no order left to keep.
func PythonJSON(v any) string {
	var b strings.Builder
	writePythonJSON(&b, v)
	return b.String()
}

func writePythonJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writePythonString(b, x)
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePythonString(b, k)
			b.WriteString(": ")
			writePythonJSON(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePythonJSON(b, e)
		}
		b.WriteByte(']')
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pythonFloat(x))
		}
	case float32:
		writePythonJSON(b, float64(x))
	default:
		b.WriteString(pythonStr(x))
	}
}

// writePythonString is json.dumps's ensure_ascii string form.
func writePythonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r < 0x10000):
				// json.dumps escapes everything outside space..tilde.
				fmt.Fprintf(b, `\u%04x`, r)
			case r >= 0x10000:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pythonStr is Python's str() of a scalar.
func pythonStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		return pythonFloat(x)
	case float32:
		return pythonFloat(float64(x))
	default:
		return fmt.Sprint(x)
	}
}

// pythonFloat is Python's repr of a float: the shortest round-trip digits,
// positional between 1e-4 and 1e16 (with ".0" when integral), else
// exponent form with at least two exponent digits.
func pythonFloat(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote is Python's shlex.quote.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Format writes a command as run.py's format_docker_command does
// (run_docker_server.py lines 195-217): "docker run" on the first line,
// then a flag and its value per line, joined with " \\\n  ".
func Format(argv []string) string {
	var lines []string
	i := 0
	if len(argv) >= 2 && !strings.HasPrefix(argv[1], "-") {
		lines = append(lines, shellQuote(argv[0])+" "+shellQuote(argv[1]))
		i = 2
	}
	for i < len(argv) {
		q := shellQuote(argv[i])
		if strings.HasPrefix(argv[i], "-") && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			lines = append(lines, q+" "+shellQuote(argv[i+1]))
			i += 2
			continue
		}
		lines = append(lines, q)
		i++
	}
	return strings.Join(lines, " \\\n  ")
}

// secretName matches environment variable names whose values are secrets.
var secretName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|CREDENTIAL|PRIVATE)`)

// Redacted is the placeholder shown instead of a secret value.
const Redacted = "<redacted>"

// Redact returns argv with the values of secret-looking -e/--env variables
// replaced, for printing. Secrets ttis itself passes (the HF token, a media
// server's API key) travel in the --env-file and never appear in argv; this
// guards what a unit's [vllm] env adds.
func Redact(argv []string) []string {
	out := slices.Clone(argv)
	for i := 1; i < len(out); i++ {
		if out[i-1] != "-e" && out[i-1] != "--env" {
			continue
		}
		if k, _, ok := strings.Cut(out[i], "="); ok && secretName.MatchString(k) {
			out[i] = k + "=" + Redacted
		}
	}
	return out
}
