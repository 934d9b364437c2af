package grammar

import (
	"regexp/syntax"
	"unicode"
)

// Regex compiles a regular expression the whole output must match (vLLM's
// guided_regex). The syntax is RE2's (Go's regexp/syntax with Perl flags);
// back-references and look-arounds do not exist there and are refused as
// syntax errors, word boundaries as unsupported. ^ and $ may appear only
// at the ends.
func (b *Builder) Regex(pattern string) (*Expr, error) { return b.regex(pattern, false, "") }

// regex compiles pattern. With jsonStr it matches the content of a JSON
// string (characters JSON must escape are written escaped) and, as JSON
// Schema's pattern keyword says, the pattern is searched for: an end that
// is not anchored may have any characters around it.
func (b *Builder) regex(pattern string, jsonStr bool, where string) (*Expr, error) {
	if len(pattern) > b.b.lim.MaxSourceBytes {
		return nil, errorf(ErrLimit, where, "the pattern is %d bytes, more than the limit of %d", len(pattern), b.b.lim.MaxSourceBytes)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, errorf(ErrSyntax, where, "pattern %q: %v", pattern, err)
	}
	rc := &regexCompiler{b: b, json: jsonStr, where: where}
	e, err := rc.convert(re, true, true, 0)
	if err != nil {
		return nil, err
	}
	if jsonStr {
		anyChars := Repeat(b.Ref(b.jsonRules().char), 0, -1)
		if !anchored(re, true) {
			e = Seq(anyChars, e)
		}
		if !anchored(re, false) {
			e = Seq(e, anyChars)
		}
	}
	return e, nil
}

type regexCompiler struct {
	b     *Builder
	json  bool
	where string
}

// anchored reports whether every match of re begins (start) or ends
// (!start) at an anchor.
func anchored(re *syntax.Regexp, start bool) bool {
	switch re.Op {
	case syntax.OpBeginText, syntax.OpBeginLine:
		return start
	case syntax.OpEndText, syntax.OpEndLine:
		return !start
	case syntax.OpCapture:
		return anchored(re.Sub[0], start)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return false
		}
		if start {
			return anchored(re.Sub[0], start)
		}
		return anchored(re.Sub[len(re.Sub)-1], start)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchored(s, start) {
				return false
			}
		}
		return true
	}
	return false
}

func (rc *regexCompiler) chars(c *charset) *Expr {
	if rc.json {
		return jsonChar(c)
	}
	return charsExpr(c)
}

func foldSet(r rune) *charset {
	spans := []span{{r, r}}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		spans = append(spans, span{f, f})
	}
	return newCharset(spans)
}

// convert turns re into an expression; atStart and atEnd say whether it
// sits at the pattern's edges, where anchors may appear.
func (rc *regexCompiler) convert(re *syntax.Regexp, atStart, atEnd bool, depth int) (*Expr, error) {
	if depth > 4*rc.b.b.lim.MaxDepth {
		return nil, errorf(ErrLimit, rc.where, "the pattern nests deeper than %d levels (limit)", 4*rc.b.b.lim.MaxDepth)
	}
	if err := rc.b.b.tick(); err != nil {
		return nil, err
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return Alt(), nil
	case syntax.OpEmptyMatch:
		return Empty(), nil
	case syntax.OpLiteral:
		var parts []*Expr
		for _, r := range re.Rune {
			set := runeSet(r)
			if re.Flags&syntax.FoldCase != 0 {
				set = foldSet(r)
			}
			parts = append(parts, rc.chars(set))
		}
		return Seq(parts...), nil
	case syntax.OpCharClass:
		var spans []span
		for i := 0; i+1 < len(re.Rune); i += 2 {
			spans = append(spans, span{re.Rune[i], re.Rune[i+1]})
		}
		set := newCharset(spans)
		if set.empty() {
			return Alt(), nil
		}
		return rc.chars(set), nil
	case syntax.OpAnyCharNotNL:
		return rc.chars(runeSet('\n').negate()), nil
	case syntax.OpAnyChar:
		return rc.chars(newCharset([]span{{0, maxRune}})), nil
	case syntax.OpBeginLine, syntax.OpBeginText:
		if !atStart {
			return nil, errorf(ErrUnsupported, rc.where, "^ is supported only at the start of the pattern")
		}
		return Empty(), nil
	case syntax.OpEndLine, syntax.OpEndText:
		if !atEnd {
			return nil, errorf(ErrUnsupported, rc.where, "$ is supported only at the end of the pattern")
		}
		return Empty(), nil
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, errorf(ErrUnsupported, rc.where, `word boundaries (\b, \B) are not supported`)
	case syntax.OpCapture:
		return rc.convert(re.Sub[0], atStart, atEnd, depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub, err := rc.convert(re.Sub[0], false, false, depth+1)
		if err != nil {
			return nil, err
		}
		switch re.Op {
		case syntax.OpStar:
			return Repeat(sub, 0, -1), nil
		case syntax.OpPlus:
			return Repeat(sub, 1, -1), nil
		case syntax.OpQuest:
			return Repeat(sub, 0, 1), nil
		}
		return Repeat(sub, re.Min, re.Max), nil
	case syntax.OpConcat:
		var parts []*Expr
		for i, s := range re.Sub {
			e, err := rc.convert(s, atStart && i == 0, atEnd && i == len(re.Sub)-1, depth+1)
			if err != nil {
				return nil, err
			}
			parts = append(parts, e)
		}
		return Seq(parts...), nil
	case syntax.OpAlternate:
		var alts []*Expr
		for _, s := range re.Sub {
			e, err := rc.convert(s, atStart, atEnd, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, e)
		}
		return Alt(alts...), nil
	}
	return nil, errorf(ErrUnsupported, rc.where, "regular expression operator %v is not supported", re.Op)
}
