package toolcall

import (
	"encoding/json"
	"fmt"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/grammar"
)

// objectSchema is the parameters schema of a function that declares none.
const objectSchema = `{"type":"object"}`

// ParametersSchema is the JSON Schema a named function's output (its
// arguments object) is constrained to.
func ParametersSchema(t runtime.Tool) string {
	if len(t.Parameters) == 0 {
		return objectSchema
	}
	return string(t.Parameters)
}

// RequiredSource is the source of the grammar that constrains an output
// for tool_choice "required": a JSON array (of one call unless parallel)
// of {"name": "<one of the tools>", "parameters": {…}}, each call's
// parameters valid for its function, as vLLM constrains it.
func RequiredSource(tools []runtime.Tool, parallel bool) string {
	b, _ := json.Marshal(struct {
		Tools    []runtime.Tool `json:"tools"`
		Parallel bool           `json:"parallel"`
	}{tools, parallel})
	return string(b)
}

// RequiredGrammar compiles a RequiredSource. Each function's parameters
// schema is compiled on its own, so its local $refs resolve within it.
func RequiredGrammar(source string, lim grammar.Limits) (*grammar.Grammar, error) {
	var src struct {
		Tools    []runtime.Tool `json:"tools"`
		Parallel bool           `json:"parallel"`
	}
	if err := json.Unmarshal([]byte(source), &src); err != nil {
		return nil, fmt.Errorf("tool calls grammar: %w", err)
	}
	if len(src.Tools) == 0 {
		return nil, &grammar.Error{Kind: grammar.ErrUnsatisfiable, Msg: "tool_choice \"required\" needs at least one tool"}
	}
	b := grammar.NewBuilder(lim)
	ws := b.WS()
	var calls []*grammar.Expr
	for i, t := range src.Tools {
		params, err := b.Schema([]byte(ParametersSchema(t)))
		if err != nil {
			if ge, ok := err.(*grammar.Error); ok {
				where := fmt.Sprintf("tools[%d] (%s) parameters", i, t.Name)
				if ge.Where != "" {
					where += " " + ge.Where
				}
				return nil, &grammar.Error{Kind: ge.Kind, Where: where, Msg: ge.Msg}
			}
			return nil, err
		}
		name, _ := json.Marshal(t.Name)
		calls = append(calls, grammar.Seq(grammar.Lit("{"), ws, grammar.Lit(`"name"`), ws, grammar.Lit(":"), ws, grammar.Lit(string(name)), ws,
			grammar.Lit(","), ws, grammar.Lit(`"parameters"`), ws, grammar.Lit(":"), ws, params, ws, grammar.Lit("}")))
	}
	call := b.Rule("call")
	b.Define(call, grammar.Alt(calls...))
	items := grammar.Seq(b.Ref(call), ws)
	if src.Parallel {
		items = grammar.Seq(items, grammar.Repeat(grammar.Seq(grammar.Lit(","), ws, b.Ref(call), ws), 0, -1))
	}
	return b.Build(grammar.Seq(grammar.Lit("["), ws, items, grammar.Lit("]")))
}
