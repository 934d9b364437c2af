package units

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/ttis-dev/ttis/units/hardened"
	"github.com/ttis-dev/ttis/units/internal/similar"
)

// Ext is the unit file extension.
const Ext = ".toml"

// MaxFileBytes bounds what a unit file may hold: a unit file is a few
// hundred bytes, so anything bigger is a mistake (or an attack on the
// daemon's memory) and is refused rather than read.
const MaxFileBytes = 1 << 20

// Load reads, strictly decodes and validates the unit file at path, and
// fills defaults. The unit's name is the file name without ".toml". Every
// problem in the file is returned at once as an ErrorList.
func Load(path string) (*Unit, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(strings.TrimSuffix(filepath.Base(path), Ext), path, data)
}

// ReadTimeout bounds one read of a unit file: the read never blocks on a
// pipe or a device node, so only a hung file system can reach it.
const ReadTimeout = 10 * time.Second

// ReadFile reads a unit file without ever blocking on it: everything that
// reads unit files (the units folder, the daemon's reload, `ttisd serve`)
// goes through here. The file is read the hardened way (units/hardened:
// type and size checked before and after a non-blocking open, the read
// bounded to MaxFileBytes and ReadTimeout). Problems are an ErrorList
// naming the path.
func ReadFile(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	data, err := hardened.ReadFile(ctx, path, MaxFileBytes)
	if err == nil {
		return data, nil
	}
	msg := err.Error()
	var he *hardened.Error
	if errors.As(err, &he) {
		switch {
		case errors.Is(err, hardened.ErrNotRegular):
			msg = he.Reason + "; remove it or rename it without .toml"
		case errors.Is(err, hardened.ErrTooLarge):
			msg = "unit file is " + he.Reason + "; a unit file holds a few hundred"
		default:
			msg = "read unit file: " + he.Reason
		}
	}
	return nil, ErrorList{{File: path, Msg: msg}}
}

// unwrapPathError drops the *PathError wrapper, whose path the message
// already starts with.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse decodes, validates and fills defaults for a unit named name whose
// text is data; path is used in error messages and to resolve relative paths
// in the file (the model file for cpu units, the secret file). It never
// panics on any input.
func Parse(name, path string, data []byte) (*Unit, error) {
	return ParseWith(name, path, data, Options{})
}

// Options change how a unit file is read on the host that runs it.
type Options struct {
	// DetectDevice resolves device = "auto" (the host's boards, from
	// tt-smi); without it an auto unit is checked without a device.
	DetectDevice func() (string, error)
	// Catalog, when set, replaces the file's catalog mode ("dev" for
	// `ttisctl plan --dev-mode`, as run.py's --dev-mode).
	Catalog string
}

// LoadWith is Load with options.
func LoadWith(path string, o Options) (*Unit, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(strings.TrimSuffix(filepath.Base(path), Ext), path, data, o)
}

// ParseWith is Parse with options.
func ParseWith(name, path string, data []byte, o Options) (*Unit, error) {
	c := &errorsOf{file: path}
	c.pos = scanPositions(data)
	u := &Unit{Name: name, Path: path}
	if abs, err := filepath.Abs(path); err == nil && path != "" {
		u.Path = abs
	}
	if !decode(c, data, u) {
		sortErrors(c.list)
		return nil, c.list
	}
	if o.Catalog != "" {
		u.Catalog = o.Catalog
	}
	if u.Device == DeviceAuto && o.DetectDevice != nil {
		d, err := o.DetectDevice()
		if err != nil {
			c.add("device", "device = \"auto\": %v", err)
			sortErrors(c.list)
			return nil, c.list
		}
		u.Device = d
	}
	validate(c, u, filepath.Dir(u.Path))
	if len(c.list) > 0 {
		sortErrors(c.list)
		return nil, c.list
	}
	u.pos = c.pos
	return u, nil
}

// decode fills u from data. It reports false when decoding could not finish
// (a syntax or type error); unknown keys are reported but decoding goes on,
// so that validation can report the file's other problems too.
func decode(c *errorsOf, data []byte, u *Unit) bool {
	// Syntax first, on its own: decoding into Unit stops at the first
	// value it cannot take, and errors from a value's UnmarshalText carry
	// no position, so a syntax error further down would be hidden behind
	// a position-less one ("[restArt]\ndelAY =10\n0").
	if !checkSyntax(c, data) {
		return false
	}
	// go-toml matches keys to fields ignoring case; TOML keys are
	// case-sensitive, and a file with both MODEL and model must not be
	// served with either.
	if !checkKeyCase(c) {
		return false
	}
	// go-toml hands bare numbers to Duration.UnmarshalText without a
	// position, so check duration values are strings first.
	ok := true
	for _, p := range durationPaths() {
		for path, kind := range c.pos.kinds {
			if matchPath(p, path) && kind != unstable.String {
				c.add(path, "duration must be a string with a unit, e.g. \"30s\" or \"10m\" (got %s)", kindName(kind))
				ok = false
			}
		}
	}
	if !ok {
		return false
	}
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(u)
	if err == nil {
		return true
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, col := e.Position()
			c.list = append(c.list, &Error{File: c.file, Line: line, Col: col, Field: strings.Join(e.Key(), "."), Msg: unknownKeyMessage(e.Key())})
		}
		return true
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		c.list = append(c.list, &Error{File: c.file, Line: line, Col: col, Field: strings.Join(de.Key(), "."), Msg: decodeMessage(de)})
		return false
	}
	c.list = append(c.list, &Error{File: c.file, Msg: err.Error()})
	return false
}

// checkSyntax parses data as a generic document and reports a syntax
// error (or a key defined twice) with its position.
func checkSyntax(c *errorsOf, data []byte) bool {
	var doc map[string]any
	err := toml.Unmarshal(data, &doc)
	if err == nil {
		return true
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		c.list = append(c.list, &Error{File: c.file, Line: line, Col: col, Field: strings.Join(de.Key(), "."), Msg: decodeMessage(de)})
		return false
	}
	c.list = append(c.list, &Error{File: c.file, Line: 1, Col: 1, Msg: err.Error()})
	return false
}

// checkKeyCase reports every key of the file that names a Unit field only
// when case is ignored ("MODEL", "[Restart]"), at the key's position. Keys
// inside maps (vllm.env) are free-form and not checked; keys that match no
// field at all are left to the strict decoder.
func checkKeyCase(c *errorsOf) bool {
	paths := make([]string, 0, len(c.pos.at))
	for p := range c.pos.at {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	reported := map[string]bool{}
	for _, path := range paths {
		parts := strings.Split(path, ".")
		t := reflect.TypeFor[Unit]()
	walk:
		for i, part := range parts {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				t = t.Elem() // part is an index
				continue
			case reflect.Struct:
			default:
				break walk // a map's keys or a scalar's: free-form
			}
			f, ok := fieldByTag(t, part)
			if ok {
				t = f.Type
				continue
			}
			if want, ok := tagFold(t, part); ok {
				key := strings.Join(parts[:i+1], ".")
				if !reported[key] {
					reported[key] = true
					c.add(key, "unknown key: keys are case-sensitive (did you mean %s?)", want)
				}
			}
			break
		}
	}
	return len(reported) == 0
}

// tagFold finds the toml tag of t that equals name when case is ignored.
func tagFold(t reflect.Type, name string) (string, bool) {
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if tag != "" && tag != "-" && t.Field(i).IsExported() && strings.EqualFold(tag, name) {
			return tag, true
		}
	}
	return "", false
}

var typeMismatchRE = regexp.MustCompile(`^cannot decode TOML (\w+) into .* of type (\S+)$`)

// decodeMessage rewrites go-toml's messages that name Go types into ones
// that name TOML types.
func decodeMessage(de *toml.DecodeError) string {
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	if m := typeMismatchRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("wrong type: got %s, want %s", m[1], tomlTypeName(m[2]))
	}
	return msg
}

func tomlTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "array of " + tomlTypeName(goType[2:]) + "s"
	case strings.HasPrefix(goType, "map["):
		return "table"
	case strings.HasPrefix(goType, "*"):
		return tomlTypeName(goType[1:])
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "integer"
	case strings.HasPrefix(goType, "float"):
		return "float"
	case goType == "bool":
		return "boolean"
	case goType == "string":
		return "string"
	case strings.HasPrefix(goType, "units."):
		return "table"
	default:
		return goType
	}
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.Integer:
		return "integer"
	case unstable.Float:
		return "float"
	case unstable.Bool:
		return "boolean"
	case unstable.Array:
		return "array"
	case unstable.InlineTable:
		return "table"
	default:
		return strings.ToLower(k.String())
	}
}

// matchPath reports whether a concrete key path ("schedule.0.x") matches a
// pattern whose "*" parts stand for array indexes.
func matchPath(pattern, path string) bool {
	pp := strings.Split(pattern, ".")
	ks := strings.Split(path, ".")
	if len(pp) != len(ks) {
		return false
	}
	for i := range pp {
		if pp[i] != "*" && pp[i] != ks[i] {
			return false
		}
	}
	return true
}

// durationPaths lists the key paths of every Duration field of Unit, found
// by reflection so that new duration fields are covered too.
func durationPaths() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	durType := reflect.TypeFor[Duration]()
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			path := prefix + name
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == durType:
				out = append(out, path)
			case ft.Kind() == reflect.Struct:
				walk(ft, path+".")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), path+".*.")
			}
		}
	}
	walk(reflect.TypeFor[Unit](), "")
	return out
}

// unknownKeyMessage names the key's closest known sibling, if any.
func unknownKeyMessage(key []string) string {
	if len(key) == 0 {
		return "unknown key"
	}
	known := knownKeys(key[:len(key)-1])
	last := key[len(key)-1]
	best, bestD := "", 3
	for _, k := range known {
		if d := similar.Distance(last, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %s?)", best)
	}
	if len(known) > 0 {
		return "unknown key (known: " + strings.Join(known, ", ") + ")"
	}
	return "unknown key"
}

// knownKeys lists the keys allowed in the table at path, found from Unit's
// toml tags.
func knownKeys(path []string) []string {
	t := reflect.TypeFor[Unit]()
	for _, part := range path {
		f, ok := fieldByTag(t, part)
		if !ok {
			return nil
		}
		t = f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name != "" && name != "-" && t.Field(i).IsExported() {
			keys = append(keys, name)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if tag == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}
