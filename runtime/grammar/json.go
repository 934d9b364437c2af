package grammar

// jsonRules are the shared rules of JSON text, created once per Builder.
// Whitespace is bounded (a space, or a newline and up to 16 blanks, at each
// place JSON allows it) and numbers have at most 16 digits in their
// integer and fraction parts and 2 in their exponent, so that a model
// cannot fill its budget with one token class forever and every number
// fits a float64.
type jsonRules struct {
	ws, char, str, integer, number, value, object, array int
	// charBMP is char without characters past U+FFFF: a string whose
	// length is bounded holds only these, so its length is the same in
	// code points (JSON Schema, Python) and in UTF-16 units (JavaScript's
	// validators, Zod).
	charBMP int
}

// maxJSONDigits bounds the digits of an integer part or a fraction.
const maxJSONDigits = 16

func (b *Builder) jsonRules() *jsonRules {
	if b.json != nil {
		return b.json
	}
	j := &jsonRules{
		ws: b.Rule("ws"), char: b.Rule("char"), str: b.Rule("string"), integer: b.Rule("integer"),
		number: b.Rule("number"), value: b.Rule("value"), object: b.Rule("object"), array: b.Rule("array"),
		charBMP: b.Rule("char-bmp"),
	}
	b.json = j
	blank := charsExpr(newCharset([]span{{' ', ' '}, {'\t', '\t'}}))
	b.Define(j.ws, Opt(Alt(Lit(" "), Seq(Lit("\n"), Repeat(blank, 0, 16)))))
	b.Define(j.char, jsonChar(nil))
	b.Define(j.charBMP, Alt(charsExpr(intersect(rawJSONChars, newCharset([]span{{0, 0xFFFF}}))), jsonEscape()))
	b.Define(j.str, Seq(Lit(`"`), Repeat(b.Ref(j.char), 0, -1), Lit(`"`)))
	digit := Range('0', '9')
	b.Define(j.integer, Seq(Opt(Lit("-")), Alt(Lit("0"), Seq(Range('1', '9'), Repeat(digit, 0, maxJSONDigits-1)))))
	b.Define(j.number, Seq(b.Ref(j.integer),
		Opt(Seq(Lit("."), Repeat(digit, 1, maxJSONDigits))),
		Opt(Seq(charsExpr(newCharset([]span{{'e', 'e'}, {'E', 'E'}})), Opt(charsExpr(newCharset([]span{{'-', '-'}, {'+', '+'}}))), Repeat(digit, 1, 2)))))
	// Members and items carry their trailing whitespace, so that an
	// empty object or array has one place for it and nothing is ambiguous.
	ws := b.Ref(j.ws)
	member := Seq(b.Ref(j.str), ws, Lit(":"), ws, b.Ref(j.value), ws)
	b.Define(j.object, Seq(Lit("{"), ws, Opt(Seq(member, Repeat(Seq(Lit(","), ws, member), 0, -1))), Lit("}")))
	item := Seq(b.Ref(j.value), ws)
	b.Define(j.array, Seq(Lit("["), ws, Opt(Seq(item, Repeat(Seq(Lit(","), ws, item), 0, -1))), Lit("]")))
	b.Define(j.value, Alt(b.Ref(j.object), b.Ref(j.array), b.Ref(j.str), b.Ref(j.number), Lit("true"), Lit("false"), Lit("null")))
	return j
}

// rawJSONChars are the characters a JSON string may hold unescaped.
var rawJSONChars = newCharset([]span{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, maxRune}})

// jsonChar matches one character of a JSON string's content, raw or
// escaped; with only non-nil, just the characters of that set. Escapes of
// surrogate code points are excluded, so each match is one character.
func jsonChar(only *charset) *Expr {
	raw := rawJSONChars
	if only != nil {
		raw = intersect(raw, only)
	}
	alts := []*Expr{}
	if !raw.empty() {
		alts = append(alts, charsExpr(raw))
	}
	if only == nil {
		return Alt(append(alts, jsonEscape())...)
	}
	// Characters of the set that JSON must escape, one canonical escape
	// each.
	for _, sp := range only.spans {
		for r := sp.lo; r <= sp.hi && r < 0x20; r++ {
			alts = append(alts, Lit(escapeRune(r)))
		}
		if sp.lo <= '"' && '"' <= sp.hi {
			alts = append(alts, Lit(`\"`))
		}
		if sp.lo <= '\\' && '\\' <= sp.hi {
			alts = append(alts, Lit(`\\`))
		}
	}
	return Alt(alts...)
}

// jsonEscape matches one escape sequence of a JSON string, except those of
// surrogate code points, so that each match is one character (of the
// Basic Multilingual Plane).
func jsonEscape() *Expr {
	hex := newCharset([]span{{'0', '9'}, {'a', 'f'}, {'A', 'F'}})
	hexNoD := newCharset([]span{{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}})
	return Seq(Lit(`\`), Alt(
		charsExpr(newCharset([]span{{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}})),
		Seq(Lit("u"), Alt(
			Seq(charsExpr(hexNoD), charsExpr(hex), charsExpr(hex), charsExpr(hex)),
			Seq(charsExpr(newCharset([]span{{'d', 'd'}, {'D', 'D'}})), Range('0', '7'), charsExpr(hex), charsExpr(hex))))))
}

func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	const hex = "0123456789abcdef"
	return `\u00` + string(hex[r>>4]) + string(hex[r&15])
}

func intersect(a, b *charset) *charset {
	var out []span
	i, j := 0, 0
	for i < len(a.spans) && j < len(b.spans) {
		lo := max(a.spans[i].lo, b.spans[j].lo)
		hi := min(a.spans[i].hi, b.spans[j].hi)
		if lo <= hi {
			out = append(out, span{lo, hi})
		}
		if a.spans[i].hi < b.spans[j].hi {
			i++
		} else {
			j++
		}
	}
	return newCharset(out)
}

// JSONValue matches any JSON value.
func (b *Builder) JSONValue() *Expr { return b.Ref(b.jsonRules().value) }

// JSONObject matches any JSON object (response_format json_object).
func (b *Builder) JSONObject() *Expr { return b.Ref(b.jsonRules().object) }

// JSONString matches any JSON string.
func (b *Builder) JSONString() *Expr { return b.Ref(b.jsonRules().str) }

// WS matches the optional whitespace JSON allows between tokens.
func (b *Builder) WS() *Expr { return b.Ref(b.jsonRules().ws) }
