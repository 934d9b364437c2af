// Package unitdoc documents the unit file format from the units package
// itself: the keys are the toml tags of units.Unit as the decoder sees
// them (walked with reflect), their text is the Go doc comment of each
// field (read from the package's source). A field without a comment is
// an error, so a new key cannot ship undocumented.
package unitdoc

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ttis-dev/ttis/units"
)

// Key is one key of the unit file.
type Key struct {
	// Table is "" for top-level keys, "auth", "schedule", …
	Table string
	// Array: the table is an array of tables ([[schedule]]).
	Array bool
	Name  string
	Type  string
	Doc   string
}

// Table is a table of the unit file with its documentation.
type Table struct {
	Name  string
	Array bool
	Doc   string // the doc comment of the Go type
	Keys  []Key
}

// Schema is the unit file format: top-level keys, then tables in the order
// of the Unit struct.
type Schema struct {
	Top    []Key
	Tables []Table
}

// Docs maps "Type.Field" (and "Type" for types) to doc comments.
type Docs map[string]string

// SourceDocs reads the doc comments of the units package's source.
func SourceDocs() (Docs, error) {
	pkg, err := build.Import("github.com/ttis-dev/ttis/units", "", build.FindOnly)
	if err != nil {
		return nil, fmt.Errorf("find the units package source: %w", err)
	}
	return DirDocs(pkg.Dir)
}

// DirDocs reads the doc comments of the non-test Go files in dir.
func DirDocs(dir string) (Docs, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	d := Docs{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc.Text()
				if doc == "" && len(gd.Specs) == 1 {
					doc = gd.Doc.Text()
				}
				d[ts.Name.Name] = doc
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := fld.Doc.Text()
					if text == "" {
						text = fld.Comment.Text()
					}
					for _, n := range fld.Names {
						d[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return d, nil
}

// Load walks units.Unit with docs. It fails naming every field without a
// doc comment.
func Load(docs Docs) (*Schema, error) {
	t := reflect.TypeFor[units.Unit]()
	s := &Schema{}
	var missing []string
	for _, f := range tomlFields(t) {
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && !isScalar(ft):
			tb := Table{Name: tomlName(f), Doc: tomlWords(t, docs[ft.Name()])}
			tb.Keys, missing = keys(ft, tb.Name, false, docs, missing)
			if tb.Doc == "" {
				missing = append(missing, ft.Name())
			}
			s.Tables = append(s.Tables, tb)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			tb := Table{Name: tomlName(f), Array: true, Doc: tomlWords(t, docs[ft.Elem().Name()])}
			tb.Keys, missing = keys(ft.Elem(), tb.Name, true, docs, missing)
			if tb.Doc == "" {
				missing = append(missing, ft.Elem().Name())
			}
			s.Tables = append(s.Tables, tb)
		default:
			k := Key{Name: tomlName(f), Type: typeName(ft), Doc: tomlWords(t, docs[t.Name()+"."+f.Name])}
			if k.Doc == "" {
				missing = append(missing, t.Name()+"."+f.Name)
			}
			s.Top = append(s.Top, k)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("undocumented unit file keys (add a doc comment to each field in package units): %s", strings.Join(missing, ", "))
	}
	return s, nil
}

func keys(t reflect.Type, table string, array bool, docs Docs, missing []string) ([]Key, []string) {
	var out []Key
	for _, f := range tomlFields(t) {
		if f.Type.Kind() == reflect.Struct && !isScalar(f.Type) {
			// A table inside a table: flatten its keys as "sub.key".
			sub, m := keys(f.Type, table, array, docs, missing)
			missing = m
			for _, k := range sub {
				k.Name = tomlName(f) + "." + k.Name
				out = append(out, k)
			}
			continue
		}
		k := Key{Table: table, Array: array, Name: tomlName(f), Type: typeName(f.Type), Doc: tomlWords(t, docs[t.Name()+"."+f.Name])}
		if k.Doc == "" {
			missing = append(missing, t.Name()+"."+f.Name)
		}
		out = append(out, k)
	}
	return out, missing
}

// tomlWords rewrites the Go names of t's fields in a doc comment as the
// keys a unit file spells ("MaxDelay" -> "max_delay").
func tomlWords(t reflect.Type, doc string) string {
	names := map[string]string{}
	for _, f := range tomlFields(t) {
		names[f.Name] = tomlName(f)
	}
	var b strings.Builder
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := doc[start:end]
		if n, ok := names[w]; ok {
			w = n
		}
		b.WriteString(w)
		start = -1
	}
	for i, c := range doc {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
		b.WriteRune(c)
	}
	flush(len(doc))
	return strings.TrimSpace(b.String())
}

// tomlFields are the fields the TOML decoder fills: exported, not
// tagged "-".
func tomlFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("toml") == "-" {
			continue
		}
		out = append(out, f)
	}
	return out
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

var (
	durationType    = reflect.TypeFor[units.Duration]()
	textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// isScalar: a struct type the decoder reads from one TOML value (units.Duration).
func isScalar(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshaler)
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array of " + plural(typeName(t.Elem()))
	case reflect.Map:
		return "table of " + plural(typeName(t.Elem()))
	}
	if isScalar(t) {
		return "string"
	}
	return t.Kind().String()
}

func plural(s string) string {
	if strings.HasSuffix(s, "s") {
		return s
	}
	return s + "s"
}
