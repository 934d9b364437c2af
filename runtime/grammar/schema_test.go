package grammar

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator compiles a schema with an independent JSON Schema
// implementation, formats asserted.
func validator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	return s
}

func validate(t testing.TB, s *jsonschema.Schema, out string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// testSchemas cover what structured outputs are asked for: objects,
// arrays, enums, nesting, bounded numbers, and the rest of the supported
// keywords.
var testSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-50,"maximum":-3},"minItems":1,"maxItems":5}`,
	`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"size":{"enum":[1,2.5,"XL",null,true]}},"required":["color"]}`,
	`{"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":8},"maxItems":3}},"required":["id","tags"],"additionalProperties":false},"active":{"type":"boolean"}},"required":["user","active"],"additionalProperties":false}`,
	`{"type":"object","properties":{"price":{"type":"number","minimum":0.5,"exclusiveMaximum":100},"ratio":{"type":"number","exclusiveMinimum":-1,"maximum":1},"score":{"type":"number","minimum":-2.25,"maximum":-2.125}},"required":["price","ratio","score"]}`,
	`{"anyOf":[{"type":"string","pattern":"^[A-Z]{2}-[0-9]{3}$"},{"type":"null"},{"type":"integer","exclusiveMinimum":10,"exclusiveMaximum":13}]}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":9},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"id":{"type":"string","format":"uuid"},"ip":{"type":"string","format":"ipv4"},"mail":{"type":"string","format":"email"},"day":{"type":"string","format":"date"}},"required":["when","id","ip","mail","day"]}`,
	`{"type":"array","prefixItems":[{"const":"point"},{"type":"number"},{"type":["number","null"]}],"items":false,"minItems":2}`,
	`{"allOf":[{"type":"object","properties":{"a":{"type":"string","pattern":"x+"}},"required":["a"]},{"properties":{"a":true,"b":{"type":"integer","minimum":3}},"required":["b"],"additionalProperties":false}]}`,
	`{"type":"object","properties":{"known":{"type":"boolean"}},"required":["known"],"additionalProperties":{"type":"integer"}}`,
	`{"type":"object"}`,
	`{"type":["string","integer"],"maxLength":3,"maximum":5}`,
	`{"type":"string","pattern":"\"q\\\\ \\n$"}`,
	`{"type":"object","properties":{"o":{"type":"object","nullable":true}},"required":["o"]}`,
	`true`,
}

func TestSchemaOutputsValidate(t *testing.T) {
	v := testVocab(t)
	for i, src := range testSchemas {
		g := mustCompile(t, KindJSONSchema, src)
		ix := mustIndex(t, g, v)
		val := validator(t, src)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		for k := 0; k < 40; k++ {
			out, ok := generate(t, ix, rng, 300+rng.IntN(200))
			if !ok {
				t.Fatalf("schema %d: output %q did not complete", i, out)
			}
			if err := validate(t, val, out); err != nil {
				t.Fatalf("schema %d %s:\noutput %s\ndoes not validate: %v", i, src, out, err)
			}
		}
	}
}

// TestSchemaTightBudget gives each output exactly the budget its shortest
// form needs plus a little: every output must still complete.
func TestSchemaTightBudget(t *testing.T) {
	v := testVocab(t)
	for i, src := range testSchemas[:8] {
		g := mustCompile(t, KindJSONSchema, src)
		ix := mustIndex(t, g, v)
		val := validator(t, src)
		need := ix.NewMatcher().Remaining()
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		for k := 0; k < 20; k++ {
			out, ok := generate(t, ix, rng, need+k)
			if !ok {
				t.Fatalf("schema %d with %d tokens (shortest output %d bytes): %q incomplete", i, need+k, need, out)
			}
			if err := validate(t, val, out); err != nil {
				t.Fatalf("schema %d: %s: %v", i, out, err)
			}
		}
	}
}

func TestSchemaAcceptsAndRejects(t *testing.T) {
	v := testVocab(t)
	for _, c := range []struct {
		schema string
		accept []string
		reject []string
	}{
		{`{"type":"integer","minimum":-5,"maximum":120}`, []string{"-5", "0", "7", "99", "120"}, []string{"-6", "121", "007", "1.0", "1e2", "-0"}},
		{`{"type":"number","exclusiveMinimum":0.25,"maximum":3}`, []string{"0.26", "0.251", "1", "2.999", "3", "3.000"}, []string{"0.25", "0.250", "0", "3.0001", "-1"}},
		{`{"type":"number","minimum":-1.5,"exclusiveMaximum":0}`, []string{"-1.5", "-1.49", "-0.0001", "-1"}, []string{"0", "-0", "-1.51", "0.0"}},
		{`{"type":"string","minLength":2,"maxLength":3}`, []string{`"ab"`, `"a\nb"`, `"\u00e9\"x"`}, []string{`"a"`, `"abcd"`, `"\ud800x"`}},
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}}}`, []string{`{}`, `{"a": 1}`, `{"b":true}`, `{"a":1,"b":false}`}, []string{`{"b":true,"a":1}`, `{"c":1}`, `{,"b":true}`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, []string{`{"a":1,"x":"y"}`, `{"ab":"z"}`}, []string{`{"a":"s"}`, `{"x":1}`, `{"a":1,"a":"y"}`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-02-28"`, `"1999-12-31"`}, []string{`"2024-02-30"`, `"2024-13-01"`, `"2024-04-31"`}},
	} {
		ix := mustIndex(t, mustCompile(t, KindJSONSchema, c.schema), v)
		for _, s := range c.accept {
			if !matches(t, ix, s) {
				t.Errorf("%s should accept %s", c.schema, s)
			}
		}
		for _, s := range c.reject {
			if matches(t, ix, s) {
				t.Errorf("%s should reject %s", c.schema, s)
			}
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, c := range []struct {
		schema string
		kind   error
		want   string
	}{
		{`{"type":"integer","minimum":5,"maximum":3}`, ErrUnsatisfiable, "#: no number lies between the lower bound 5 and the upper bound 3"},
		{`{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}`, ErrUnsatisfiable, "no integer lies between"},
		{`{"enum":[]}`, ErrUnsatisfiable, "#/enum: no value of enum is allowed"},
		{`{"type":"object","properties":{"a":{"type":"string","minLength":4,"maxLength":2}},"required":["a"]}`, ErrUnsatisfiable, `#/properties/a/minLength: minLength 4 is above maxLength 2`},
		{`{"type":"object","required":["x"],"additionalProperties":false}`, ErrUnsatisfiable, `property "x" is required`},
		{`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},"$ref":"#/$defs/n"}`, ErrUnsatisfiable, "no finite output"},
		{`{"type":"string","not":{"const":"x"}}`, ErrUnsupported, `#: keyword "not" is not supported`},
		{`{"type":"array","uniqueItems":true}`, ErrUnsupported, "uniqueItems"},
		{`{"type":"number","multipleOf":0.5}`, ErrUnsupported, "multipleOf"},
		{`{"$ref":"https://example.com/s.json"}`, ErrUnsupported, "only references within the schema"},
		{`{"$ref":"#/$defs/missing"}`, ErrSyntax, "points at nothing"},
		{`{"type":"strin"}`, ErrSyntax, `unknown type "strin"`},
		{`{"type":"string","pattern":"(a"}`, ErrSyntax, "missing closing )"},
		{`{"type":"string","pattern":"a\\bb"}`, ErrUnsupported, "word boundaries"},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, ErrUnsatisfiable, "allOf requires types"},
		{`{"allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{}},"additionalProperties":false}]}`, ErrUnsatisfiable, `property "a" is required but its schema is false`},
		{`{"type":"array","maxItems":100000}`, ErrLimit, "above the limit"},
		{`{"type":`, ErrSyntax, "invalid JSON"},
		{`[1,2]`, ErrSyntax, "must be an object or a boolean"},
		{`false`, ErrUnsatisfiable, "no finite output"},
		{strings.Repeat(`{"items":`, 80) + `{}` + strings.Repeat(`}`, 80), ErrLimit, "deeper than"},
	} {
		_, err := Compile(KindJSONSchema, c.schema, Limits{})
		if err == nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %v containing %q", c.schema, err, c.kind, c.want)
		}
	}
}

func TestSchemaSizeLimits(t *testing.T) {
	big := `{"type":"string","maxLength":4000}`
	if _, err := Compile(KindJSONSchema, big, Limits{MaxElements: 2000}); !errors.Is(err, ErrLimit) {
		t.Errorf("maxLength 4000 with 2000 elements allowed: got %v", err)
	}
	if _, err := Compile(KindJSONSchema, `{"type":"object"}`, Limits{MaxSourceBytes: 5}); !errors.Is(err, ErrLimit) {
		t.Errorf("source limit: got %v", err)
	}
}

func TestRegexAndChoice(t *testing.T) {
	v := testVocab(t)
	ix := mustIndex(t, mustCompile(t, KindRegex, `(?i)ab[0-9]{2,3}|x+y?`), v)
	for s, want := range map[string]bool{"ab12": true, "AB123": true, "aB1234": false, "xxx": true, "xy": true, "y": false} {
		if matches(t, ix, s) != want {
			t.Errorf("regex: %q match = %v", s, !want)
		}
	}
	ix = mustIndex(t, mustCompile(t, KindChoice, `["yes","no","maybe so"]`), v)
	for s, want := range map[string]bool{"yes": true, "no": true, "maybe so": true, "ye": false, "yesno": false} {
		if matches(t, ix, s) != want {
			t.Errorf("choice: %q match = %v", s, !want)
		}
	}
	if _, err := Compile(KindChoice, `[]`, Limits{}); !errors.Is(err, ErrUnsatisfiable) {
		t.Errorf("empty choice: %v", err)
	}
	if _, err := Compile(KindRegex, `a^b`, Limits{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("inner anchor: %v", err)
	}
}

func TestBoundedStringsStayInTheBMP(t *testing.T) {
	ix := mustIndex(t, mustCompile(t, KindJSONSchema, `{"type":"string","maxLength":3}`), testVocab(t))
	for s, want := range map[string]bool{`"é日x"`: true, `"😀"`: false, `"\u00e9"`: true} {
		if matches(t, ix, s) != want {
			t.Errorf("%s: match %v", s, !want)
		}
	}
}
