package unitdoc

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units"
)

// TestEveryKeyIsDocumented is the guard against drift: a field added to
// units.Unit (or a table of it) without a doc comment fails here.
func TestEveryKeyIsDocumented(t *testing.T) {
	docs, err := SourceDocs()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Top) == 0 || len(s.Tables) == 0 {
		t.Fatalf("schema has %d keys and %d tables", len(s.Top), len(s.Tables))
	}
}

func TestUndocumentedFieldIsNamed(t *testing.T) {
	docs, err := SourceDocs()
	if err != nil {
		t.Fatal(err)
	}
	delete(docs, "Limits.MaxQueue")
	delete(docs, "Schedule")
	_, err = Load(docs)
	if err == nil || !strings.Contains(err.Error(), "Limits.MaxQueue") || !strings.Contains(err.Error(), "Schedule") {
		t.Fatalf("Load without two docs: %v", err)
	}
}

// TestSchemaIsTheDecoders checks the walk against the struct the TOML
// decoder fills: every toml-tagged field appears once, under its table,
// and the doc text names keys, not Go fields.
func TestSchemaIsTheDecoders(t *testing.T) {
	docs, err := SourceDocs()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(docs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Key{}
	for _, k := range s.Top {
		got[k.Name] = k
	}
	for _, tb := range s.Tables {
		for _, k := range tb.Keys {
			got[tb.Name+"."+k.Name] = k
		}
	}
	var want []string
	var walk func(reflect.Type, string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if !f.IsExported() || tag == "-" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[units.Duration]() {
				walk(ft, prefix+tag+".")
				continue
			}
			want = append(want, prefix+tag)
		}
	}
	walk(reflect.TypeFor[units.Unit](), "")
	if len(got) != len(want) {
		t.Errorf("schema has %d keys, the struct %d", len(got), len(want))
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("key %s missing from the schema", k)
		}
	}
	for name, want := range map[string]string{
		"restart.delay":          "doubles up to max_delay",
		"limits.request_timeout": "duration",
		"chips":                  "array of integers",
		"vllm.env":               "table of strings",
		"sim.time_scale":         "number",
	} {
		k := got[name]
		if !strings.Contains(k.Doc+" "+k.Type, want) {
			t.Errorf("%s: %q (%s), want it to mention %q", name, k.Doc, k.Type, want)
		}
	}
	if tb := s.Tables[len(s.Tables)-1]; tb.Name != "evals" {
		t.Errorf("last table %q, want evals (struct order)", tb.Name)
	}
}
