package units

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// position is a 1-based line and column in a unit file.
type position struct{ line, col int }

// positions maps dotted key paths ("restart.delay", "schedule.1.calendar",
// "chips.2") to where they are written: keys to the key's first character,
// array elements to the element, tables to their header.
type positions struct {
	at map[string]position
	// kinds records the TOML kind of each key's value, to check value types
	// the decoder would accept too loosely.
	kinds map[string]unstable.Kind
}

// find returns the position of path or, when the path is not in the file
// (a missing key), of the nearest enclosing table that is.
func (p positions) find(path string) (line, col int) {
	for path != "" {
		if pos, ok := p.at[path]; ok {
			return pos.line, pos.col
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0, 0
}

// has reports whether the file sets anything under the key path.
func (p positions) has(path string) bool {
	if _, ok := p.at[path]; ok {
		return true
	}
	for k := range p.at {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
}

// scanPositions walks the document with go-toml's parser. It returns what
// it found before a syntax error; the decoder reports that error itself.
func scanPositions(data []byte) positions {
	p := positions{at: map[string]position{}, kinds: map[string]unstable.Kind{}}
	var parser unstable.Parser
	parser.Reset(data)
	arrayCount := map[string]int{}
	prefix := ""
	for parser.NextExpression() {
		expr := parser.Expression()
		switch expr.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first := keyParts(&parser, expr.Key())
			path := strings.Join(keys, ".")
			if expr.Kind == unstable.ArrayTable {
				n := arrayCount[path]
				arrayCount[path] = n + 1
				if _, ok := p.at[path]; !ok {
					p.at[path] = first
				}
				path += "." + strconv.Itoa(n)
			}
			p.define(path, first)
			prefix = path
		case unstable.KeyValue:
			p.keyValue(&parser, prefix, expr)
		}
	}
	return p
}

func (p positions) keyValue(parser *unstable.Parser, prefix string, kv *unstable.Node) {
	keys, first := keyParts(parser, kv.Key())
	path := strings.Join(keys, ".")
	if prefix != "" {
		path = prefix + "." + path
	}
	p.define(path, first)
	p.value(parser, path, kv.Value())
}

func (p positions) value(parser *unstable.Parser, path string, v *unstable.Node) {
	p.kinds[path] = v.Kind
	switch v.Kind {
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			elPath := path + "." + strconv.Itoa(i)
			if pos, ok := nodePos(parser, el); ok {
				p.at[elPath] = pos
			}
			p.value(parser, elPath, el)
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if it.Node().Kind == unstable.KeyValue {
				p.keyValue(parser, path, it.Node())
			}
		}
	}
}

// keyParts returns the parts of a (possibly dotted) key and where it starts.
func keyParts(parser *unstable.Parser, it unstable.Iterator) ([]string, position) {
	var parts []string
	var first position
	for it.Next() {
		n := it.Node()
		if len(parts) == 0 {
			first, _ = nodePos(parser, n)
		}
		parts = append(parts, string(n.Data))
	}
	return parts, first
}

func nodePos(parser *unstable.Parser, n *unstable.Node) (position, bool) {
	if n.Raw.Length == 0 && n.Raw.Offset == 0 {
		return position{}, false
	}
	s := parser.Shape(n.Raw)
	return position{s.Start.Line, s.Start.Column}, true
}

// define records that path is written at pos. [a.b] and a.b = 1 define
// table a too, implicitly, at the same place, unless it is written
// elsewhere: an error about a (a mis-cased name) points there.
func (p positions) define(path string, pos position) {
	for i := strings.IndexByte(path, '.'); i >= 0; i = nextDot(path, i) {
		if _, ok := p.at[path[:i]]; !ok {
			p.at[path[:i]] = pos
		}
	}
	p.at[path] = pos
}

// nextDot is the index of the next '.' in path after i, or -1.
func nextDot(path string, i int) int {
	if j := strings.IndexByte(path[i+1:], '.'); j >= 0 {
		return i + 1 + j
	}
	return -1
}
