package grammar

import (
	"encoding/json"
	"fmt"
)

// Kind names the notation of a constraint's source.
type Kind string

// Kinds of constraint sources.
const (
	// KindJSONSchema: a JSON Schema document; the output is JSON valid
	// against it.
	KindJSONSchema Kind = "json_schema"
	// KindJSONObject: any JSON object (the source is ignored).
	KindJSONObject Kind = "json_object"
	// KindRegex: a regular expression the whole output matches.
	KindRegex Kind = "regex"
	// KindChoice: a JSON array of strings; the output is one of them.
	KindChoice Kind = "choice"
	// KindGBNF: a llama.cpp GBNF grammar.
	KindGBNF Kind = "gbnf"
)

// Compile builds the grammar of a constraint, bounded by lim.
func Compile(kind Kind, source string, lim Limits) (*Grammar, error) {
	b := NewBuilder(lim)
	var root *Expr
	var err error
	switch kind {
	case KindJSONSchema:
		root, err = b.Schema([]byte(source))
	case KindJSONObject:
		root = b.JSONObject()
	case KindRegex:
		root, err = b.Regex(source)
	case KindChoice:
		var choices []string
		if err := json.Unmarshal([]byte(source), &choices); err != nil {
			return nil, errorf(ErrSyntax, "", "choices must be a JSON array of strings: %v", err)
		}
		root, err = Choice(choices)
	case KindGBNF:
		root, err = b.GBNF(source)
	default:
		return nil, fmt.Errorf("grammar: unknown kind %q", kind)
	}
	if err != nil {
		return nil, err
	}
	return b.Build(root)
}

// Choice matches exactly one of the strings.
func Choice(choices []string) (*Expr, error) {
	if len(choices) == 0 {
		return nil, errorf(ErrUnsatisfiable, "", "the list of choices is empty")
	}
	alts := make([]*Expr, len(choices))
	for i, c := range choices {
		alts[i] = Lit(c)
	}
	return Alt(alts...), nil
}
