package grammar

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Schema compiles a JSON Schema (draft 2020-12, with the draft-4..7
// spellings of tuples and exclusive bounds) into an expression matching
// JSON texts valid against it, as OpenAI structured outputs, vLLM's
// guided_json and llama.cpp's json_schema use them:
//
//   - types (one or several), enum and const, anyOf and oneOf (as
//     alternatives), allOf (merged), local $ref (recursion included), true
//     and false schemas (OpenAPI's nullable is an annotation: JSON Schema
//     does not know it, so null is written only where the type allows it);
//   - objects: properties in the order written, required, and
//     additionalProperties. Without additionalProperties only the declared
//     properties are written (every output is still valid); an object
//     schema that declares nothing allows any object;
//   - arrays: items, prefixItems (or items as a list), minItems, maxItems;
//   - strings: minLength, maxLength (a bounded string holds only
//     characters up to U+FFFF, so that its length is the same counted in
//     code points, as JSON Schema does, and in UTF-16 units, as
//     JavaScript validators do), pattern (searched, as JSON Schema says,
//     unless anchored) and the formats date, time, date-time, uuid, ipv4,
//     email and hostname (other formats are annotations);
//   - numbers and integers: minimum, maximum and their exclusive forms,
//     exactly, with decimals written without an exponent.
//
// Keywords that constrain in ways a grammar cannot express (not, if/then/
// else, patternProperties, uniqueItems, multipleOf, …) are refused with an
// error naming the keyword and its place, rather than ignored: every
// output must validate.
func (b *Builder) Schema(doc []byte) (*Expr, error) {
	if len(doc) > b.b.lim.MaxSourceBytes {
		return nil, errorf(ErrLimit, "", "the schema is %d bytes, more than the limit of %d", len(doc), b.b.lim.MaxSourceBytes)
	}
	root, err := parseJSON(doc, b.b.lim.MaxDepth*4)
	if err != nil {
		return nil, err
	}
	c := &schemaCompiler{b: b, root: root, refs: map[string]int{}}
	return c.compile(root, "#", 0)
}

type schemaCompiler struct {
	b    *Builder
	root *jnode
	refs map[string]int
}

// annotations are keywords that do not constrain the output.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "default": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "contentMediaType": true, "contentEncoding": true,
	"$vocabulary": true, "strict": true, "nullable": true, "discriminator": true, "xml": true, "externalDocs": true, "example": true,
}

// unsupported are constraining keywords constrained decoding cannot honour.
var unsupported = []string{
	"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
	"patternProperties", "propertyNames", "contains", "minContains", "maxContains",
	"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
}

func (c *schemaCompiler) compile(n *jnode, path string, depth int) (*Expr, error) {
	b := c.b
	if depth > b.b.lim.MaxDepth {
		return nil, errorf(ErrLimit, path, "the schema nests deeper than %d levels (limit)", b.b.lim.MaxDepth)
	}
	if err := b.b.tick(); err != nil {
		return nil, err
	}
	switch n.kind {
	case jBool:
		if n.b {
			return b.JSONValue(), nil
		}
		return Alt(), nil
	case jObj:
	default:
		return nil, errorf(ErrSyntax, path, "a schema must be an object or a boolean, not %s", kindName(n.kind))
	}
	for _, k := range unsupported {
		if n.get(k) != nil {
			return nil, errorf(ErrUnsupported, path, "keyword %q is not supported for structured outputs", k)
		}
	}
	if ref := n.get("$ref"); ref != nil {
		return c.compileRef(n, ref, path, depth)
	}
	if all := n.get("allOf"); all != nil {
		m, err := c.flattenAllOf(n, path, depth)
		if err != nil {
			return nil, err
		}
		return c.compile(m, path, depth+1)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if branches := n.get(kw); branches != nil {
			if branches.kind != jArr || len(branches.arr) == 0 {
				return nil, errorf(ErrSyntax, path+"/"+kw, "%s must be a non-empty array of schemas", kw)
			}
			base := without(n, kw)
			var alts []*Expr
			for i, br := range branches.arr {
				p := path + "/" + kw + "/" + strconv.Itoa(i)
				sub := br
				if constrains(base) {
					var err error
					if sub, err = c.merge(base, br, p, depth); err != nil {
						return nil, err
					}
				}
				e, err := c.compile(sub, p, depth+1)
				if err != nil {
					return nil, err
				}
				alts = append(alts, e)
			}
			return Alt(alts...), nil
		}
	}
	types, err := schemaTypes(n, path)
	if err != nil {
		return nil, err
	}
	if v := n.get("const"); v != nil {
		return Lit(v.String()), nil
	}
	if en := n.get("enum"); en != nil {
		return enumExpr(en, types, path)
	}
	if types == nil {
		return b.JSONValue(), nil
	}
	var alts []*Expr
	for _, t := range types {
		var e *Expr
		var err error
		switch t {
		case "object":
			e, err = c.object(n, path, depth)
		case "array":
			e, err = c.array(n, path, depth)
		case "string":
			e, err = c.str(n, path)
		case "integer", "number":
			e, err = c.number(n, path, t == "integer")
		case "boolean":
			e = Alt(Lit("true"), Lit("false"))
		case "null":
			e = Lit("null")
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, e)
	}
	return Alt(alts...), nil
}

var typeNames = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

// schemaTypes returns the types a schema allows: from "type", else
// inferred from its type-specific keywords; nil means any value.
func schemaTypes(n *jnode, path string) ([]string, error) {
	t := n.get("type")
	if t == nil {
		var out []string
		has := func(ks ...string) bool {
			for _, k := range ks {
				if n.get(k) != nil {
					return true
				}
			}
			return false
		}
		if has("properties", "required", "additionalProperties", "minProperties", "maxProperties") {
			out = append(out, "object")
		}
		if has("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "additionalItems") {
			out = append(out, "array")
		}
		if has("minLength", "maxLength", "pattern", "format") {
			out = append(out, "string")
		}
		if has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf") {
			out = append(out, "number")
		}
		return out, nil
	}
	var list []*jnode
	switch t.kind {
	case jStr:
		list = []*jnode{t}
	case jArr:
		list = t.arr
	default:
		return nil, errorf(ErrSyntax, path+"/type", "type must be a string or an array of strings")
	}
	var out []string
	for _, x := range list {
		if x.kind != jStr || !slices.Contains(typeNames, x.s) {
			return nil, errorf(ErrSyntax, path+"/type", "unknown type %s (want one of %s)", x.String(), strings.Join(typeNames, ", "))
		}
		if !slices.Contains(out, x.s) {
			out = append(out, x.s)
		}
	}
	if len(out) == 0 {
		return nil, errorf(ErrUnsatisfiable, path+"/type", "an empty list of types allows no value")
	}
	// "number" covers "integer".
	if slices.Contains(out, "number") {
		out = slices.DeleteFunc(out, func(s string) bool { return s == "integer" })
	}
	return out, nil
}

func typeOf(v *jnode) string {
	switch v.kind {
	case jNull:
		return "null"
	case jBool:
		return "boolean"
	case jNum:
		if r, ok := new(big.Rat).SetString(v.num.String()); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case jStr:
		return "string"
	case jArr:
		return "array"
	}
	return "object"
}

func enumExpr(en *jnode, types []string, path string) (*Expr, error) {
	if en.kind != jArr {
		return nil, errorf(ErrSyntax, path+"/enum", "enum must be an array")
	}
	var alts []*Expr
	seen := map[string]bool{}
	for _, v := range en.arr {
		t := typeOf(v)
		if types != nil && !slices.Contains(types, t) && !(t == "integer" && slices.Contains(types, "number")) {
			continue
		}
		s := v.String()
		if !seen[s] {
			seen[s] = true
			alts = append(alts, Lit(s))
		}
	}
	if len(alts) == 0 {
		return nil, errorf(ErrUnsatisfiable, path+"/enum", "no value of enum is allowed (the enum is empty or none of its values has the schema's type)")
	}
	return Alt(alts...), nil
}

// constrains reports whether a schema object has keywords besides
// annotations.
func constrains(n *jnode) bool {
	for _, k := range n.keys {
		if !annotations[k] {
			return true
		}
	}
	return false
}

func without(n *jnode, drop ...string) *jnode {
	out := &jnode{kind: jObj}
	for i, k := range n.keys {
		if !slices.Contains(drop, k) {
			out.keys = append(out.keys, k)
			out.vals = append(out.vals, n.vals[i])
		}
	}
	return out
}

func (c *schemaCompiler) resolve(ref *jnode, path string) (*jnode, string, error) {
	if ref.kind != jStr {
		return nil, "", errorf(ErrSyntax, path+"/$ref", "$ref must be a string")
	}
	ptr := ref.s
	if !strings.HasPrefix(ptr, "#") {
		return nil, "", errorf(ErrUnsupported, path+"/$ref", "$ref %q: only references within the schema (starting with #) are supported", ptr)
	}
	n := c.root
	if ptr != "#" {
		if !strings.HasPrefix(ptr, "#/") {
			return nil, "", errorf(ErrUnsupported, path+"/$ref", "$ref %q: only JSON pointers (#/…) are supported", ptr)
		}
		for _, part := range strings.Split(ptr[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			switch n.kind {
			case jObj:
				n = n.get(part)
			case jArr:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(n.arr) {
					n = nil
				} else {
					n = n.arr[i]
				}
			default:
				n = nil
			}
			if n == nil {
				return nil, "", errorf(ErrSyntax, path+"/$ref", "$ref %q points at nothing in the schema", ptr)
			}
		}
	}
	return n, ptr, nil
}

func (c *schemaCompiler) compileRef(n, ref *jnode, path string, depth int) (*Expr, error) {
	target, ptr, err := c.resolve(ref, path)
	if err != nil {
		return nil, err
	}
	if rest := without(n, "$ref"); constrains(rest) {
		m, err := c.merge(target, rest, path, depth)
		if err != nil {
			return nil, err
		}
		return c.compile(m, path, depth+1)
	}
	if r, ok := c.refs[ptr]; ok {
		return c.b.Ref(r), nil
	}
	r := c.b.Rule(ptr)
	c.refs[ptr] = r
	e, err := c.compile(target, ptr, depth+1)
	if err != nil {
		return nil, err
	}
	c.b.Define(r, e)
	return c.b.Ref(r), nil
}

// sub compiles a subschema into its own rule, so that repeated uses share
// it.
func (c *schemaCompiler) sub(n *jnode, path string, depth int) (*Expr, error) {
	e, err := c.compile(n, path, depth+1)
	if err != nil {
		return nil, err
	}
	if e.op == opRef {
		return e, nil
	}
	r := c.b.Rule(path)
	c.b.Define(r, e)
	return c.b.Ref(r), nil
}

// flattenAllOf merges allOf's schemas with the rest of n.
func (c *schemaCompiler) flattenAllOf(n *jnode, path string, depth int) (*jnode, error) {
	all := n.get("allOf")
	if all.kind != jArr || len(all.arr) == 0 {
		return nil, errorf(ErrSyntax, path+"/allOf", "allOf must be a non-empty array of schemas")
	}
	m := without(n, "allOf")
	for i, s := range all.arr {
		var err error
		if m, err = c.merge(m, s, path+"/allOf/"+strconv.Itoa(i), depth); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// merge combines two schemas that must both hold into one.
func (c *schemaCompiler) merge(a, b *jnode, path string, depth int) (*jnode, error) {
	if depth > c.b.b.lim.MaxDepth {
		return nil, errorf(ErrUnsupported, path, "allOf or $ref with sibling keywords nests or recurses deeper than %d levels", c.b.b.lim.MaxDepth)
	}
	norm := func(x *jnode) (*jnode, error) {
		if x.kind == jBool {
			if x.b {
				return &jnode{kind: jObj}, nil
			}
			return nil, errorf(ErrUnsatisfiable, path, "a false schema in allOf allows no value")
		}
		if x.kind != jObj {
			return nil, errorf(ErrSyntax, path, "a schema must be an object or a boolean")
		}
		if ref := x.get("$ref"); ref != nil {
			t, _, err := c.resolve(ref, path)
			if err != nil {
				return nil, err
			}
			return c.merge(t, without(x, "$ref"), path, depth+1)
		}
		if x.get("allOf") != nil {
			return c.flattenAllOf(x, path, depth+1)
		}
		return x, nil
	}
	var err error
	if a, err = norm(a); err != nil {
		return nil, err
	}
	if b, err = norm(b); err != nil {
		return nil, err
	}
	out := &jnode{kind: jObj}
	set := func(k string, v *jnode) {
		for i, kk := range out.keys {
			if kk == k {
				out.vals[i] = v
				return
			}
		}
		out.keys = append(out.keys, k)
		out.vals = append(out.vals, v)
	}
	// additionalProperties of one side governs the other side's
	// properties that it does not declare itself.
	for _, sides := range [][2]*jnode{{a, b}, {b, a}} {
		own, other := sides[0], sides[1]
		addl := own.get("additionalProperties")
		oprops := other.get("properties")
		if addl == nil || oprops == nil || oprops.kind != jObj {
			continue
		}
		mine := own.get("properties")
		np := &jnode{kind: jObj}
		for i, pk := range oprops.keys {
			np.keys = append(np.keys, pk)
			if mine.get(pk) == nil {
				np.vals = append(np.vals, allOf(oprops.vals[i], addl))
			} else {
				np.vals = append(np.vals, oprops.vals[i])
			}
		}
		if other == a {
			a = withKey(a, "properties", np)
		} else {
			b = withKey(b, "properties", np)
		}
	}
	for i, k := range a.keys {
		set(k, a.vals[i])
	}
	for i, k := range b.keys {
		bv := b.vals[i]
		av := a.get(k)
		if av == nil || annotations[k] {
			if av == nil {
				set(k, bv)
			}
			continue
		}
		v, err := mergeKeyword(k, av, bv, path)
		if err != nil {
			return nil, err
		}
		set(k, v)
	}
	return out, nil
}

func withKey(n *jnode, k string, v *jnode) *jnode {
	out := without(n, k)
	out.keys = append(out.keys, k)
	out.vals = append(out.vals, v)
	return out
}

func allOf(x, y *jnode) *jnode {
	if (x.kind == jBool && !x.b) || (y.kind == jBool && !y.b) {
		return &jnode{kind: jBool}
	}
	return &jnode{kind: jObj, keys: []string{"allOf"}, vals: []*jnode{{kind: jArr, arr: []*jnode{x, y}}}}
}

func numOf(n *jnode) (*big.Rat, bool) {
	if n == nil || n.kind != jNum {
		return nil, false
	}
	return new(big.Rat).SetString(n.num.String())
}

// mergeKeyword combines one keyword both schemas of an allOf have.
func mergeKeyword(k string, a, b *jnode, path string) (*jnode, error) {
	where := path + "/" + k
	switch k {
	case "type":
		ta, err := schemaTypes(&jnode{kind: jObj, keys: []string{"type"}, vals: []*jnode{a}}, path)
		if err != nil {
			return nil, err
		}
		tb, err := schemaTypes(&jnode{kind: jObj, keys: []string{"type"}, vals: []*jnode{b}}, path)
		if err != nil {
			return nil, err
		}
		var both []*jnode
		for _, t := range ta {
			switch {
			case slices.Contains(tb, t):
				both = append(both, &jnode{kind: jStr, s: t})
			case t == "number" && slices.Contains(tb, "integer"), t == "integer" && slices.Contains(tb, "number"):
				both = append(both, &jnode{kind: jStr, s: "integer"})
			}
		}
		if len(both) == 0 {
			return nil, errorf(ErrUnsatisfiable, where, "allOf requires types %s and %s at once", a.String(), b.String())
		}
		return &jnode{kind: jArr, arr: both}, nil
	case "properties":
		if a.kind != jObj || b.kind != jObj {
			return nil, errorf(ErrSyntax, where, "properties must be an object")
		}
		out := &jnode{kind: jObj}
		for i, pk := range a.keys {
			out.keys = append(out.keys, pk)
			if bv := b.get(pk); bv != nil {
				out.vals = append(out.vals, allOf(a.vals[i], bv))
			} else {
				out.vals = append(out.vals, a.vals[i])
			}
		}
		for i, pk := range b.keys {
			if a.get(pk) == nil {
				out.keys = append(out.keys, pk)
				out.vals = append(out.vals, b.vals[i])
			}
		}
		return out, nil
	case "required":
		out := &jnode{kind: jArr}
		seen := map[string]bool{}
		for _, x := range append(append([]*jnode(nil), a.arr...), b.arr...) {
			if x.kind == jStr && !seen[x.s] {
				seen[x.s] = true
				out.arr = append(out.arr, x)
			}
		}
		return out, nil
	case "additionalProperties", "items":
		if (a.kind == jBool && !a.b) || (b.kind == jBool && !b.b) {
			return &jnode{kind: jBool}, nil
		}
		return allOf(a, b), nil
	case "minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum":
		if a.kind == jBool || b.kind == jBool {
			break
		}
		x, ok1 := numOf(a)
		y, ok2 := numOf(b)
		if ok1 && ok2 {
			if x.Cmp(y) >= 0 {
				return a, nil
			}
			return b, nil
		}
	case "maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum":
		if a.kind == jBool || b.kind == jBool {
			break
		}
		x, ok1 := numOf(a)
		y, ok2 := numOf(b)
		if ok1 && ok2 {
			if x.Cmp(y) <= 0 {
				return a, nil
			}
			return b, nil
		}
	case "enum":
		out := &jnode{kind: jArr}
		for _, x := range a.arr {
			for _, y := range b.arr {
				if x.String() == y.String() {
					out.arr = append(out.arr, x)
					break
				}
			}
		}
		return out, nil
	}
	if a.String() == b.String() {
		return a, nil
	}
	return nil, errorf(ErrUnsupported, where, "allOf sets %q twice, to %s and %s, which cannot be combined", k, a.String(), b.String())
}

func intOf(n *jnode, where string) (int, error) {
	r, ok := numOf(n)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		return 0, errorf(ErrSyntax, where, "must be a non-negative integer")
	}
	return int(r.Num().Int64()), nil
}

// optInt reads an optional non-negative integer keyword; def when absent.
func optInt(n *jnode, k, path string, def int) (int, error) {
	v := n.get(k)
	if v == nil {
		return def, nil
	}
	return intOf(v, path+"/"+k)
}

func (c *schemaCompiler) object(n *jnode, path string, depth int) (*Expr, error) {
	b := c.b
	props := n.get("properties")
	if props != nil && props.kind != jObj {
		return nil, errorf(ErrSyntax, path+"/properties", "properties must be an object")
	}
	var required []string
	if r := n.get("required"); r != nil {
		if r.kind != jArr {
			return nil, errorf(ErrSyntax, path+"/required", "required must be an array of strings")
		}
		for _, x := range r.arr {
			if x.kind != jStr {
				return nil, errorf(ErrSyntax, path+"/required", "required must be an array of strings")
			}
			if !slices.Contains(required, x.s) {
				required = append(required, x.s)
			}
		}
	}
	addl := n.get("additionalProperties")
	minP, err := optInt(n, "minProperties", path, 0)
	if err != nil {
		return nil, err
	}
	maxP, err := optInt(n, "maxProperties", path, -1)
	if err != nil {
		return nil, err
	}
	if (props == nil || len(props.keys) == 0) && addl == nil && len(required) == 0 && minP == 0 && maxP < 0 {
		return b.JSONObject(), nil
	}
	extra := addl != nil && !(addl.kind == jBool && !addl.b)
	type prop struct {
		name string
		s    *jnode
		req  bool
		path string
	}
	var list []prop
	if props != nil {
		for i, k := range props.keys {
			list = append(list, prop{k, props.vals[i], slices.Contains(required, k), path + "/properties/" + escapePointer(k)})
		}
	}
	for _, r := range required {
		if props.get(r) != nil {
			continue
		}
		if addl != nil && addl.kind == jBool && !addl.b {
			return nil, errorf(ErrUnsatisfiable, path+"/required", "property %q is required, but it is not in properties and additionalProperties is false", r)
		}
		s := addl
		if s == nil {
			s = &jnode{kind: jBool, b: true}
		}
		list = append(list, prop{r, s, true, path + "/additionalProperties"})
	}
	nreq := 0
	for _, p := range list {
		if p.req {
			nreq++
		}
	}
	if minP > nreq {
		return nil, errorf(ErrUnsupported, path+"/minProperties", "minProperties %d above the %d required properties is not supported", minP, nreq)
	}
	if maxP >= 0 && (extra || maxP < len(list)) {
		if maxP < nreq {
			return nil, errorf(ErrUnsatisfiable, path+"/maxProperties", "maxProperties %d is below the %d required properties", maxP, nreq)
		}
		return nil, errorf(ErrUnsupported, path+"/maxProperties", "maxProperties %d below the number of allowed properties is not supported", maxP)
	}
	ws := b.WS()
	var kvs []*Expr
	var names []string
	var kept []prop
	for _, p := range list {
		if p.s.kind == jBool && !p.s.b {
			if p.req {
				return nil, errorf(ErrUnsatisfiable, p.path, "property %q is required but its schema is false", p.name)
			}
			continue
		}
		v, err := c.sub(p.s, p.path, depth)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, Seq(Lit(quoteJSON(p.name)), ws, Lit(":"), ws, v, ws))
		names = append(names, p.name)
		kept = append(kept, p)
	}
	// chain[i][f] matches the members from property i on; f says whether
	// none has been written yet (no comma due). Each is a rule, so that an
	// optional property's two continuations share the rest.
	n0 := len(kept)
	chain := make([][2]int, n0+1)
	for i := range chain {
		chain[i] = [2]int{b.Rule(path + "/members"), b.Rule(path + "/members")}
	}
	sepIf := func(first bool) *Expr {
		if first {
			return Empty()
		}
		return Seq(Lit(","), ws)
	}
	var extraKV *Expr
	if extra {
		v, err := c.sub(addl, path+"/additionalProperties", depth)
		if err != nil {
			return nil, err
		}
		extraKV = Seq(stringExcept(names), ws, Lit(":"), ws, v, ws)
	}
	for f := 0; f < 2; f++ {
		first := f == 0
		switch {
		case extraKV == nil:
			b.Define(chain[n0][f], Empty())
		case first:
			b.Define(chain[n0][f], Opt(Seq(extraKV, Repeat(Seq(Lit(","), ws, extraKV), 0, -1))))
		default:
			b.Define(chain[n0][f], Repeat(Seq(Lit(","), ws, extraKV), 0, -1))
		}
	}
	for i := n0 - 1; i >= 0; i-- {
		for f := 0; f < 2; f++ {
			first := f == 0
			with := Seq(sepIf(first), kvs[i], b.Ref(chain[i+1][1]))
			if kept[i].req {
				b.Define(chain[i][f], with)
			} else {
				b.Define(chain[i][f], Alt(with, b.Ref(chain[i+1][f])))
			}
		}
	}
	return Seq(Lit("{"), ws, b.Ref(chain[0][0]), Lit("}")), nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// stringExcept matches a JSON string of plain characters (no escapes)
// that is none of words, built over the words' trie: at each node the
// string may end (unless a word ends there), continue along the trie, or
// leave it with any other character.
func stringExcept(words []string) *Expr {
	type node struct {
		end  bool
		kids map[rune]*node
		keys []rune
	}
	root := &node{kids: map[rune]*node{}}
	for _, w := range words {
		n := root
		for _, r := range w {
			k := n.kids[r]
			if k == nil {
				k = &node{kids: map[rune]*node{}}
				n.kids[r] = k
				n.keys = append(n.keys, r)
			}
			n = k
		}
		n.end = true
	}
	plain := intersect(rawJSONChars, newCharset([]span{{0, '\\' - 1}, {'\\' + 1, maxRune}}))
	anyRest := Repeat(charsExpr(plain), 0, -1)
	var build func(n *node) *Expr
	build = func(n *node) *Expr {
		var alts []*Expr
		if !n.end {
			alts = append(alts, Empty())
		}
		var taken []span
		for _, r := range n.keys {
			taken = append(taken, span{r, r})
			alts = append(alts, Seq(Lit(string(r)), build(n.kids[r])))
		}
		other := intersect(plain, newCharset(taken).negate())
		if !other.empty() {
			alts = append(alts, Seq(charsExpr(other), anyRest))
		}
		return Alt(alts...)
	}
	return Seq(Lit(`"`), build(root), Lit(`"`))
}

func (c *schemaCompiler) array(n *jnode, path string, depth int) (*Expr, error) {
	b := c.b
	items := n.get("items")
	var prefix []*jnode
	prefixPath := path + "/prefixItems"
	if p := n.get("prefixItems"); p != nil {
		if p.kind != jArr {
			return nil, errorf(ErrSyntax, prefixPath, "prefixItems must be an array of schemas")
		}
		prefix = p.arr
	}
	restPath := path + "/items"
	if items != nil && items.kind == jArr { // draft 4-7 tuple
		prefix, prefixPath = items.arr, path+"/items"
		items, restPath = n.get("additionalItems"), path+"/additionalItems"
	}
	minI, err := optInt(n, "minItems", path, 0)
	if err != nil {
		return nil, err
	}
	maxI, err := optInt(n, "maxItems", path, -1)
	if err != nil {
		return nil, err
	}
	if lim := b.b.lim.MaxRepeat; minI > lim || maxI > lim {
		return nil, errorf(ErrLimit, path, "minItems/maxItems above the limit of %d", lim)
	}
	noRest := items != nil && items.kind == jBool && !items.b
	if noRest && (maxI < 0 || maxI > len(prefix)) {
		maxI = len(prefix)
	}
	if maxI >= 0 && minI > maxI {
		return nil, errorf(ErrUnsatisfiable, path+"/minItems", "minItems %d is above maxItems %d", minI, maxI)
	}
	if u := n.get("uniqueItems"); u != nil && u.kind == jBool && u.b && (maxI < 0 || maxI > 1) {
		return nil, errorf(ErrUnsupported, path+"/uniqueItems", "uniqueItems is not supported for structured outputs (unless maxItems is at most 1)")
	}
	ws := b.WS()
	var rest *Expr
	if !noRest {
		if items == nil {
			rest = b.JSONValue()
		} else if rest, err = c.sub(items, restPath, depth); err != nil {
			return nil, err
		}
	}
	sep := Seq(Lit(","), ws)
	var body *Expr
	k := len(prefix)
	if k == 0 {
		upper := -1
		if maxI >= 0 {
			upper = maxI - 1
		}
		switch {
		case maxI == 0:
			body = Empty()
		case minI == 0:
			body = Opt(Seq(rest, ws, Repeat(Seq(sep, rest, ws), 0, upper)))
		default:
			body = Seq(rest, ws, Repeat(Seq(sep, rest, ws), minI-1, upper))
		}
	} else {
		// Items past the prefix follow items; they come only after every
		// prefix item.
		body = Empty()
		if rest != nil && (maxI < 0 || maxI > k) {
			upper := -1
			if maxI >= 0 {
				upper = maxI - k
			}
			body = Repeat(Seq(sep, rest, ws), max(minI-k, 0), upper)
		} else if minI > k {
			return nil, errorf(ErrUnsatisfiable, path+"/minItems", "minItems %d is above the %d items the array may hold", minI, k)
		}
		top := k
		if maxI >= 0 && maxI < k {
			top = maxI
		}
		for i := top - 1; i >= 0; i-- {
			v, err := c.sub(prefix[i], prefixPath+"/"+strconv.Itoa(i), depth)
			if err != nil {
				return nil, err
			}
			sepI := Empty()
			if i > 0 {
				sepI = sep
			}
			item := Seq(sepI, v, ws, body)
			if i < minI {
				body = item
			} else {
				body = Opt(item)
			}
		}
	}
	return Seq(Lit("["), ws, body, Lit("]")), nil
}

// formats maps the string formats the grammar enforces to patterns.
var formats = map[string]string{
	"date":      `[0-9]{4}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)`,
	"time":      `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
	"uuid":      `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`,
	"ipv4":      `((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`,
	"hostname":  `[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?){0,4}`,
	"email":     `[a-z0-9]{1,16}(\.[a-z0-9]{1,15}){0,2}@[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?){0,3}\.[a-z]{2,6}`,
	"date-time": "",
}

func init() {
	formats["date-time"] = formats["date"] + "T" + formats["time"]
}

func (c *schemaCompiler) str(n *jnode, path string) (*Expr, error) {
	b := c.b
	minL, err := optInt(n, "minLength", path, 0)
	if err != nil {
		return nil, err
	}
	maxL, err := optInt(n, "maxLength", path, -1)
	if err != nil {
		return nil, err
	}
	hasLen := n.get("minLength") != nil || n.get("maxLength") != nil
	if pat := n.get("pattern"); pat != nil {
		if pat.kind != jStr {
			return nil, errorf(ErrSyntax, path+"/pattern", "pattern must be a string")
		}
		if hasLen {
			return nil, errorf(ErrUnsupported, path+"/pattern", "pattern together with minLength or maxLength is not supported; put the length in the pattern")
		}
		e, err := b.regex(pat.s, true, path+"/pattern")
		if err != nil {
			return nil, err
		}
		return Seq(Lit(`"`), e, Lit(`"`)), nil
	}
	if f := n.get("format"); f != nil && f.kind == jStr && formats[f.s] != "" {
		if hasLen {
			return nil, errorf(ErrUnsupported, path+"/format", "format %q together with minLength or maxLength is not supported", f.s)
		}
		e, err := b.regex("^"+formats[f.s]+"$", true, path+"/format")
		if err != nil {
			return nil, err
		}
		return Seq(Lit(`"`), e, Lit(`"`)), nil
	}
	if maxL >= 0 && minL > maxL {
		return nil, errorf(ErrUnsatisfiable, path+"/minLength", "minLength %d is above maxLength %d", minL, maxL)
	}
	if lim := b.b.lim.MaxRepeat; minL > lim || maxL > lim {
		return nil, errorf(ErrLimit, path, "minLength/maxLength above the limit of %d", lim)
	}
	if !hasLen {
		return b.JSONString(), nil
	}
	return Seq(Lit(`"`), Repeat(b.Ref(b.jsonRules().charBMP), minL, maxL), Lit(`"`)), nil
}

// numBound reads the lower or upper bound of a number schema, honouring
// both the draft-6+ numeric exclusive keywords and draft 4's booleans.
func numBound(n *jnode, kw, exKw, path string) (bound, error) {
	var out bound
	v := n.get(kw)
	ex := n.get(exKw)
	if v != nil {
		r, ok := numOf(v)
		if !ok {
			return out, errorf(ErrSyntax, path+"/"+kw, "must be a number")
		}
		out = bound{v: r, incl: true}
		if ex != nil && ex.kind == jBool && ex.b {
			out.incl = false
		}
	}
	if ex != nil && ex.kind != jBool {
		r, ok := numOf(ex)
		if !ok {
			return out, errorf(ErrSyntax, path+"/"+exKw, "must be a number")
		}
		lower := kw == "minimum"
		if out.v == nil || (lower && r.Cmp(out.v) >= 0) || (!lower && r.Cmp(out.v) <= 0) {
			out = bound{v: r, incl: false}
		}
	}
	return out, nil
}

func (c *schemaCompiler) number(n *jnode, path string, isInt bool) (*Expr, error) {
	b := c.b
	if m := n.get("multipleOf"); m != nil {
		r, ok := numOf(m)
		if !ok || !isInt || !r.IsInt() || r.Num().Cmp(big.NewInt(1)) != 0 {
			return nil, errorf(ErrUnsupported, path+"/multipleOf", "multipleOf is not supported for structured outputs (except 1 on integers)")
		}
	}
	lo, err := numBound(n, "minimum", "exclusiveMinimum", path)
	if err != nil {
		return nil, err
	}
	hi, err := numBound(n, "maximum", "exclusiveMaximum", path)
	if err != nil {
		return nil, err
	}
	if lo.v != nil && hi.v != nil {
		if c := lo.v.Cmp(hi.v); c > 0 || (c == 0 && !(lo.incl && hi.incl)) {
			return nil, errorf(ErrUnsatisfiable, path, "no number lies between the lower bound %s and the upper bound %s", lo.v.RatString(), hi.v.RatString())
		}
	}
	if isInt {
		if lo.v == nil && hi.v == nil {
			return b.Ref(b.jsonRules().integer), nil
		}
		var l, h *big.Int
		if lo.v != nil {
			l = ceilRat(lo.v)
			if !lo.incl && lo.v.IsInt() {
				l.Add(l, big.NewInt(1))
			}
		}
		if hi.v != nil {
			h = floorRat(hi.v)
			if !hi.incl && hi.v.IsInt() {
				h.Sub(h, big.NewInt(1))
			}
		}
		if l != nil && h != nil && l.Cmp(h) > 0 {
			return nil, errorf(ErrUnsatisfiable, path, "no integer lies between the lower bound %s and the upper bound %s", lo.v.RatString(), hi.v.RatString())
		}
		return intRange(l, h), nil
	}
	if lo.v == nil && hi.v == nil {
		return b.Ref(b.jsonRules().number), nil
	}
	e, ok := decRange(lo, hi)
	if !ok {
		return nil, errorf(ErrUnsupported, path, "number bounds with more than %d decimal digits are not supported", maxJSONDigits)
	}
	return e, nil
}

func floorRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	_ = m
	return q
}

func ceilRat(r *big.Rat) *big.Int {
	q := floorRat(r)
	if !r.IsInt() {
		q.Add(q, big.NewInt(1))
	}
	return q
}
