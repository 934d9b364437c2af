package openai

// A streamed response (/v1/completions or /v1/chat/completions with
// "stream": true) is read the lean way: a buffered SSE reader over the raw
// body (sse.go) and a targeted scan of each chunk's JSON for the handful of
// fields a benchmark needs, with no reflection and no allocation per chunk
// once the buffers have grown.

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Chunk is what a benchmark needs from one "data:" payload. ParseChunk
// resets every field, reusing Text's storage.
type Chunk struct {
	// HasChoices is true when "choices" is a non-empty array.
	HasChoices bool
	// Text is choices[0].text (completions) or choices[0].delta.content
	// (chat), unescaped. Reasoning content (delta.reasoning_content or
	// delta.reasoning) is appended too: it is generated output.
	Text []byte
	// HasText is true when a text, content or reasoning field was present
	// (even empty).
	HasText bool
	// RoleOnly is true for a chat delta that names a role and carries no
	// content: the opening chunk of a chat stream, which holds no token.
	RoleOnly bool
	// FinishReason is choices[0].finish_reason ("" when null or absent).
	FinishReason string
	// HasUsage is true when "usage" is an object.
	HasUsage bool
	// PromptTokens and CompletionTokens are usage's counts.
	PromptTokens, CompletionTokens int
	// Error is the message of an in-stream {"error": ...} payload.
	Error string
	// Timings is llama.cpp server's own account of the request, sent in
	// its last chunk; HasTimings says whether it was there. A benchmark
	// compares it with what the client measured.
	Timings    Timings
	HasTimings bool

	hasRole bool
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("malformed chunk JSON")

// ParseChunk scans one chunk's JSON object into c. Unknown keys are skipped
// without being decoded. A repeated key overrides the earlier one, as with
// encoding/json.
func ParseChunk(b []byte, c *Chunk) error {
	text := c.Text[:0]
	*c = Chunk{Text: text}
	s := scanner{b: b}
	if err := s.objectStart(); err != nil {
		return err
	}
	for {
		key, done, err := s.nextKey()
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "choices":
			err = s.choices(c)
		case "usage":
			err = s.usage(c)
		case "error":
			err = s.errorValue(c)
		case "timings":
			err = s.timings(c)
		default:
			err = s.skipValue(0)
		}
		if err != nil {
			return err
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing data")
	}
	c.RoleOnly = c.hasRole && len(c.Text) == 0
	return nil
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrSyntax, what, s.i)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) objectStart() error {
	if s.peek() != '{' {
		return s.fail("expected '{'")
	}
	s.i++
	return nil
}

// nextKey returns the next key of the object being read, or done at its
// closing brace. It consumes the separating comma and the colon.
func (s *scanner) nextKey() (key []byte, done bool, err error) {
	switch s.peek() {
	case '}':
		s.i++
		return nil, true, nil
	case ',':
		if s.prevSignificant() == '{' {
			return nil, false, s.fail("expected key after '{'")
		}
		s.i++
		if s.peek() != '"' {
			return nil, false, s.fail("expected key after ','")
		}
	case '"':
		// The first key, or a key right after the opening brace. A key
		// directly following a value without a comma is caught below.
		if s.i > 0 && s.prevSignificant() != '{' {
			return nil, false, s.fail("expected ',' between members")
		}
	default:
		return nil, false, s.fail("expected key or '}'")
	}
	key, err = s.rawString()
	if err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.fail("expected ':'")
	}
	s.i++
	return key, false, nil
}

// prevSignificant returns the last non-space byte before the cursor.
func (s *scanner) prevSignificant() byte {
	for j := s.i - 1; j >= 0; j-- {
		switch s.b[j] {
		case ' ', '\t', '\n', '\r':
			continue
		default:
			return s.b[j]
		}
	}
	return 0
}

// rawString reads a string and returns its raw (still escaped) contents.
// Keys we match never contain escapes, so comparing raw bytes suffices; a
// key spelled with escapes simply matches nothing and is skipped.
func (s *scanner) rawString() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("expected string")
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			return out, nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, s.fail("unterminated string")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if _, ok := hex4(s.b, s.i+2); !ok {
					return nil, s.fail("bad \\u escape")
				}
				s.i += 6
			default:
				return nil, s.fail("bad escape")
			}
		case c < 0x20:
			return nil, s.fail("control character in string")
		default:
			s.i++
		}
	}
	return nil, s.fail("unterminated string")
}

// appendString reads a string value and appends its unescaped text to dst.
// Invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json does.
func (s *scanner) appendString(dst []byte) ([]byte, error) {
	raw, err := s.rawString()
	if err != nil {
		return dst, err
	}
	simple := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return append(dst, raw...), nil
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return dst, s.fail("bad escape")
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return dst, s.fail("bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok2 := lowSurrogate(raw, i); ok2 {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						dst = utf8.AppendRune(dst, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, s.fail("bad escape")
		}
		i += 2
	}
	return dst, nil
}

func lowSurrogate(raw []byte, i int) (rune, bool) {
	if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
		return hex4(raw, i+2)
	}
	return 0, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// literal consumes one of true, false or null.
func (s *scanner) literal() ([]byte, error) {
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return s.b[s.i-len(lit) : s.i], nil
		}
	}
	return nil, s.fail("bad literal")
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	n := digits()
	if n == 0 || (n > 1 && s.b[intStart] == '0') {
		return nil, s.fail("bad number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.fail("bad number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.fail("bad number")
		}
	}
	return s.b[start:s.i], nil
}

// skipValue consumes any JSON value without decoding it.
func (s *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.rawString()
		return err
	case c == '{':
		s.i++
		for {
			_, done, err := s.nextKey()
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
		}
	case c == '[':
		return s.array(depth, func(int) error { return s.skipValue(depth + 1) })
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, err := s.literal()
		return err
	default:
		return s.fail("expected value")
	}
}

// array reads an array, calling elem for each element with its index.
func (s *scanner) array(depth int, elem func(i int) error) error {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	if s.peek() != '[' {
		return s.fail("expected '['")
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// isNull consumes a null and reports whether one was there.
func (s *scanner) isNull() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) choices(c *Chunk) error {
	// A repeated "choices" key replaces the earlier one.
	c.HasChoices, c.HasText, c.hasRole, c.FinishReason = false, false, false, ""
	c.Text = c.Text[:0]
	if s.isNull() {
		return nil
	}
	return s.array(1, func(i int) error {
		if i > 0 {
			// The benchmark sends n=1; further choices are not measured.
			return s.skipValue(2)
		}
		c.HasChoices = true
		return s.choice(c)
	})
}

func (s *scanner) choice(c *Chunk) error {
	if s.peek() != '{' {
		// Not an object: encoding/json would reject the mirror struct; we
		// are lenient and just skip it.
		return s.skipValue(2)
	}
	s.i++
	for {
		key, done, err := s.nextKey()
		if err != nil || done {
			return err
		}
		switch string(key) {
		case "text":
			err = s.textField(c)
		case "delta", "message":
			err = s.delta(c)
		case "finish_reason":
			if s.isNull() {
				c.FinishReason = ""
				continue
			}
			if s.peek() != '"' {
				err = s.skipValue(3)
				break
			}
			var v []byte
			v, err = s.appendString(nil)
			c.FinishReason = string(v)
		default:
			err = s.skipValue(3)
		}
		if err != nil {
			return err
		}
	}
}

// textField reads a text-like value (string or null).
func (s *scanner) textField(c *Chunk) error {
	if s.isNull() {
		return nil
	}
	if s.peek() != '"' {
		return s.skipValue(3)
	}
	var err error
	c.HasText = true
	c.Text, err = s.appendString(c.Text)
	return err
}

func (s *scanner) delta(c *Chunk) error {
	if s.isNull() {
		return nil
	}
	if s.peek() != '{' {
		return s.skipValue(3)
	}
	s.i++
	for {
		key, done, err := s.nextKey()
		if err != nil || done {
			return err
		}
		switch string(key) {
		case "content", "reasoning_content", "reasoning":
			err = s.textField(c)
		case "role":
			if s.isNull() {
				continue
			}
			c.hasRole = true
			err = s.skipValue(4)
		default:
			err = s.skipValue(4)
		}
		if err != nil {
			return err
		}
	}
}

func (s *scanner) usage(c *Chunk) error {
	c.HasUsage, c.PromptTokens, c.CompletionTokens = false, 0, 0
	if s.isNull() {
		return nil
	}
	if s.peek() != '{' {
		return s.skipValue(1)
	}
	s.i++
	c.HasUsage = true
	for {
		key, done, err := s.nextKey()
		if err != nil || done {
			return err
		}
		switch string(key) {
		case "prompt_tokens":
			c.PromptTokens, err = s.intValue()
		case "completion_tokens":
			c.CompletionTokens, err = s.intValue()
		default:
			err = s.skipValue(2)
		}
		if err != nil {
			return err
		}
	}
}

// intValue reads a non-negative integer count; null reads as 0.
func (s *scanner) intValue() (int, error) {
	if s.isNull() {
		return 0, nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.fail("expected integer token count")
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(string(num))
	if err != nil || v < 0 {
		return 0, s.fail("token count is not a non-negative integer")
	}
	return v, nil
}

func (s *scanner) errorValue(c *Chunk) error {
	switch s.peek() {
	case 'n':
		if s.isNull() {
			return nil
		}
	case '"':
		v, err := s.appendString(nil)
		c.Error = string(v)
		if c.Error == "" {
			c.Error = "error"
		}
		return err
	case '{':
		s.i++
		c.Error = "error"
		for {
			key, done, err := s.nextKey()
			if err != nil || done {
				return err
			}
			if string(key) == "message" && s.peek() == '"' {
				var v []byte
				v, err = s.appendString(nil)
				if len(v) > 0 {
					c.Error = string(v)
				}
			} else {
				err = s.skipValue(2)
			}
			if err != nil {
				return err
			}
		}
	}
	c.Error = "error"
	return s.skipValue(1)
}

// Timings is the "timings" object llama.cpp's server adds to a response:
// prompt processing and generation as the server measured them.
type Timings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMS    float64 `json:"prompt_ms"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMS float64 `json:"predicted_ms"`
}

func (s *scanner) timings(c *Chunk) error {
	c.HasTimings, c.Timings = false, Timings{}
	if s.isNull() {
		return nil
	}
	if s.peek() != '{' {
		return s.skipValue(1)
	}
	s.i++
	c.HasTimings = true
	for {
		key, done, err := s.nextKey()
		if err != nil || done {
			return err
		}
		switch string(key) {
		case "prompt_n":
			c.Timings.PromptN, err = s.intValue()
		case "predicted_n":
			c.Timings.PredictedN, err = s.intValue()
		case "prompt_ms":
			c.Timings.PromptMS, err = s.floatValue()
		case "predicted_ms":
			c.Timings.PredictedMS, err = s.floatValue()
		default:
			err = s.skipValue(2)
		}
		if err != nil {
			return err
		}
	}
}

// floatValue reads a number; null reads as 0.
func (s *scanner) floatValue() (float64, error) {
	if s.isNull() {
		return 0, nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.fail("expected a number")
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return 0, s.fail("number out of range")
	}
	return v, nil
}
