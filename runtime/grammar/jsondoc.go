package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jkind is the type of a JSON document node.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNum
	jStr
	jArr
	jObj
)

// jnode is a parsed JSON value that keeps object keys in their written
// order (a schema's property order is the order the output follows).
type jnode struct {
	kind jkind
	b    bool
	num  json.Number
	s    string
	arr  []*jnode
	keys []string
	vals []*jnode
}

func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObj {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// parseJSON parses one JSON document, refusing nesting deeper than
// maxDepth and trailing data.
func parseJSON(data []byte, maxDepth int) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec, 0, maxDepth)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errorf(ErrSyntax, "", "unexpected data after the JSON value")
	}
	return n, nil
}

func readNode(dec *json.Decoder, depth, maxDepth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, errorf(ErrLimit, "", "JSON nested deeper than %d levels (limit)", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, errorf(ErrSyntax, "", "invalid JSON: %v", err)
	}
	switch t := tok.(type) {
	case nil:
		return &jnode{kind: jNull}, nil
	case bool:
		return &jnode{kind: jBool, b: t}, nil
	case json.Number:
		return &jnode{kind: jNum, num: t}, nil
	case string:
		return &jnode{kind: jStr, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &jnode{kind: jArr}
			for dec.More() {
				v, err := readNode(dec, depth+1, maxDepth)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, errorf(ErrSyntax, "", "invalid JSON: %v", err)
			}
			return n, nil
		case '{':
			n := &jnode{kind: jObj}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, errorf(ErrSyntax, "", "invalid JSON: %v", err)
				}
				k, _ := kt.(string)
				v, err := readNode(dec, depth+1, maxDepth)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, errorf(ErrSyntax, "", "invalid JSON: %v", err)
			}
			return n, nil
		}
	}
	return nil, errorf(ErrSyntax, "", "invalid JSON token %v", tok)
}

// encode writes n as compact JSON, keys in order.
func (n *jnode) encode(sb *strings.Builder) {
	switch n.kind {
	case jNull:
		sb.WriteString("null")
	case jBool:
		if n.b {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case jNum:
		sb.WriteString(n.num.String())
	case jStr:
		sb.WriteString(quoteJSON(n.s))
	case jArr:
		sb.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				sb.WriteByte(',')
			}
			v.encode(sb)
		}
		sb.WriteByte(']')
	case jObj:
		sb.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(quoteJSON(k))
			sb.WriteByte(':')
			n.vals[i].encode(sb)
		}
		sb.WriteByte('}')
	}
}

func (n *jnode) String() string {
	var sb strings.Builder
	n.encode(&sb)
	return sb.String()
}

// quoteJSON writes s as a JSON string without HTML escaping.
func quoteJSON(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func kindName(k jkind) string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}
