package torchfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// Bounds on what a state_dict's pickle may make the machine do.
const (
	maxStack   = 1 << 16
	maxMemo    = 1 << 20
	maxString  = 1 << 20
	maxOps     = 1 << 24
	maxDictLen = 1 << 20
)

// pyTuple, pyList and pyDict are the Python containers a state_dict's
// pickle builds; pyGlobal is a class or function named by GLOBAL, and
// pyStorage a storage named by a persistent id.
type (
	pyTuple []any
	pyList  struct{ items []any }
	pyDict  struct {
		keys []any
		vals map[any]any
	}
	pyGlobal struct{ module, name string }
	mark     struct{}
)

type pyStorage struct {
	dtype DType
	key   string
	numel int64
}

func newDict() *pyDict { return &pyDict{vals: map[any]any{}} }

func (d *pyDict) set(k, v any) error {
	switch k.(type) {
	case string, int64, bool, nil, float64:
	default:
		return fmt.Errorf("dictionary key of type %T", k)
	}
	if _, ok := d.vals[k]; !ok {
		if len(d.keys) >= maxDictLen {
			return fmt.Errorf("dictionary of more than %d entries", maxDictLen)
		}
		d.keys = append(d.keys, k)
	}
	d.vals[k] = v
	return nil
}

// unpickler runs the subset of the pickle machine (protocols 2 to 4) that
// torch.save writes for a state_dict: containers, strings, numbers, the
// globals in allowed, persistent ids for storages, and REDUCE only of
// OrderedDict, _rebuild_tensor_v2 and _rebuild_parameter. Anything else
// is an error, never an import.
type unpickler struct {
	data    []byte
	pos     int
	stack   []any
	marks   []int
	memo    map[int64]any
	persist func(pid any) (any, error)
	ops     int
}

func (u *unpickler) fail(format string, a ...any) error {
	return fmt.Errorf("pickle at byte %d: %s", u.pos, fmt.Sprintf(format, a...))
}

func (u *unpickler) take(n int) ([]byte, error) {
	if n < 0 || u.pos+n > len(u.data) {
		return nil, u.fail("truncated (%d bytes wanted, %d left)", n, len(u.data)-u.pos)
	}
	b := u.data[u.pos : u.pos+n]
	u.pos += n
	return b, nil
}

func (u *unpickler) push(v any) error {
	if len(u.stack) >= maxStack {
		return u.fail("stack deeper than %d", maxStack)
	}
	u.stack = append(u.stack, v)
	return nil
}

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 || len(u.marks) > 0 && len(u.stack) <= u.marks[len(u.marks)-1] {
		return nil, u.fail("pop from an empty stack")
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	if _, ok := v.(mark); ok {
		return nil, u.fail("mark where a value was expected")
	}
	return v, nil
}

// popMark returns the values pushed since the last MARK.
func (u *unpickler) popMark() ([]any, error) {
	if len(u.marks) == 0 {
		return nil, u.fail("no mark")
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := append([]any(nil), u.stack[m:]...)
	u.stack = u.stack[:m]
	return items, nil
}

func (u *unpickler) top() (any, error) {
	if len(u.stack) == 0 || len(u.marks) > 0 && len(u.stack) <= u.marks[len(u.marks)-1] {
		return nil, u.fail("empty stack")
	}
	return u.stack[len(u.stack)-1], nil
}

func (u *unpickler) memoize(idx int64) error {
	v, err := u.top()
	if err != nil {
		return err
	}
	if len(u.memo) >= maxMemo {
		return u.fail("memo of more than %d entries", maxMemo)
	}
	u.memo[idx] = v
	return nil
}

// load runs one pickle from u.pos to its STOP and returns its value.
func (u *unpickler) load() (any, error) {
	u.stack, u.marks = u.stack[:0], u.marks[:0]
	u.memo = map[int64]any{} // every pickle of a stream has its own memo, as every pickle.load does
	for {
		u.ops++
		if u.ops > maxOps {
			return nil, u.fail("more than %d operations", maxOps)
		}
		b, err := u.take(1)
		if err != nil {
			return nil, err
		}
		op := b[0]
		switch op {
		case 0x80: // PROTO
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			if p[0] < 2 || p[0] > 5 {
				return nil, u.fail("pickle protocol %d", p[0])
			}
		case 0x95: // FRAME: a length to skip, the frame's contents follow inline
			if _, err := u.take(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			v, err := u.pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case '(':
			if len(u.marks) >= maxStack {
				return nil, u.fail("too many marks")
			}
			u.marks = append(u.marks, len(u.stack))
		case '}':
			err = u.push(newDict())
		case ']':
			err = u.push(&pyList{})
		case ')':
			err = u.push(pyTuple{})
		case 'N':
			err = u.push(nil)
		case 0x88:
			err = u.push(true)
		case 0x89:
			err = u.push(false)
		case 'K':
			var v []byte
			if v, err = u.take(1); err == nil {
				err = u.push(int64(v[0]))
			}
		case 'M':
			var v []byte
			if v, err = u.take(2); err == nil {
				err = u.push(int64(binary.LittleEndian.Uint16(v)))
			}
		case 'J':
			var v []byte
			if v, err = u.take(4); err == nil {
				err = u.push(int64(int32(binary.LittleEndian.Uint32(v))))
			}
		case 0x8a: // LONG1
			var n, v []byte
			if n, err = u.take(1); err != nil {
				return nil, err
			}
			if v, err = u.take(int(n[0])); err != nil {
				return nil, err
			}
			err = u.push(long(v))
		case 'G':
			var v []byte
			if v, err = u.take(8); err == nil {
				err = u.push(math.Float64frombits(binary.BigEndian.Uint64(v)))
			}
		case 'X', 0x8c, 0x8d, 'B', 'C', 0x8e: // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINBYTES, SHORT_BINBYTES, BINBYTES8
			var n uint64
			switch op {
			case 'X', 'B':
				var v []byte
				if v, err = u.take(4); err == nil {
					n = uint64(binary.LittleEndian.Uint32(v))
				}
			case 0x8c, 'C':
				var v []byte
				if v, err = u.take(1); err == nil {
					n = uint64(v[0])
				}
			default:
				var v []byte
				if v, err = u.take(8); err == nil {
					n = binary.LittleEndian.Uint64(v)
				}
			}
			if err != nil {
				return nil, err
			}
			if n > maxString {
				return nil, u.fail("string of %d bytes", n)
			}
			var s []byte
			if s, err = u.take(int(n)); err == nil {
				err = u.push(string(s))
			}
		case 'c': // GLOBAL module\nname\n
			var mod, name string
			if mod, err = u.line(); err != nil {
				return nil, err
			}
			if name, err = u.line(); err != nil {
				return nil, err
			}
			err = u.global(mod, name)
		case 0x93: // STACK_GLOBAL
			var n, m any
			if n, err = u.pop(); err != nil {
				return nil, err
			}
			if m, err = u.pop(); err != nil {
				return nil, err
			}
			ms, ok1 := m.(string)
			ns, ok2 := n.(string)
			if !ok1 || !ok2 {
				return nil, u.fail("STACK_GLOBAL of %T and %T", m, n)
			}
			err = u.global(ms, ns)
		case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
			var idx int64
			switch op {
			case 'q':
				var v []byte
				if v, err = u.take(1); err == nil {
					idx = int64(v[0])
				}
			case 'r':
				var v []byte
				if v, err = u.take(4); err == nil {
					idx = int64(binary.LittleEndian.Uint32(v))
				}
			default:
				idx = int64(len(u.memo))
			}
			if err == nil {
				err = u.memoize(idx)
			}
		case 'h', 'j': // BINGET, LONG_BINGET
			var idx int64
			if op == 'h' {
				var v []byte
				if v, err = u.take(1); err == nil {
					idx = int64(v[0])
				}
			} else {
				var v []byte
				if v, err = u.take(4); err == nil {
					idx = int64(binary.LittleEndian.Uint32(v))
				}
			}
			if err != nil {
				return nil, err
			}
			v, ok := u.memo[idx]
			if !ok {
				return nil, u.fail("memo %d is not set", idx)
			}
			err = u.push(v)
		case 't':
			var items []any
			if items, err = u.popMark(); err == nil {
				err = u.push(pyTuple(items))
			}
		case 0x85, 0x86, 0x87: // TUPLE1..3
			n := int(op - 0x84)
			if len(u.stack) < n {
				return nil, u.fail("tuple of %d from a stack of %d", n, len(u.stack))
			}
			items := make([]any, n)
			for i := n - 1; i >= 0; i-- {
				if items[i], err = u.pop(); err != nil {
					return nil, err
				}
			}
			err = u.push(pyTuple(items))
		case 'a', 'e': // APPEND, APPENDS
			var items []any
			if op == 'a' {
				var v any
				if v, err = u.pop(); err != nil {
					return nil, err
				}
				items = []any{v}
			} else if items, err = u.popMark(); err != nil {
				return nil, err
			}
			var l any
			if l, err = u.top(); err != nil {
				return nil, err
			}
			pl, ok := l.(*pyList)
			if !ok {
				return nil, u.fail("append to a %T", l)
			}
			if len(pl.items)+len(items) > maxDictLen {
				return nil, u.fail("list of more than %d items", maxDictLen)
			}
			pl.items = append(pl.items, items...)
		case 's', 'u': // SETITEM, SETITEMS
			var items []any
			if op == 's' {
				var k, v any
				if v, err = u.pop(); err != nil {
					return nil, err
				}
				if k, err = u.pop(); err != nil {
					return nil, err
				}
				items = []any{k, v}
			} else if items, err = u.popMark(); err != nil {
				return nil, err
			}
			if len(items)%2 != 0 {
				return nil, u.fail("SETITEMS of an odd number of values")
			}
			var d any
			if d, err = u.top(); err != nil {
				return nil, err
			}
			pd, ok := d.(*pyDict)
			if !ok {
				return nil, u.fail("set item of a %T", d)
			}
			for i := 0; i < len(items); i += 2 {
				if err = pd.set(items[i], items[i+1]); err != nil {
					return nil, u.fail("%v", err)
				}
			}
		case 'Q': // BINPERSID
			var pid any
			if pid, err = u.pop(); err != nil {
				return nil, err
			}
			if u.persist == nil {
				return nil, u.fail("persistent id where none is expected")
			}
			var v any
			if v, err = u.persist(pid); err != nil {
				return nil, u.fail("%v", err)
			}
			err = u.push(v)
		case 'R': // REDUCE
			var args, fn any
			if args, err = u.pop(); err != nil {
				return nil, err
			}
			if fn, err = u.pop(); err != nil {
				return nil, err
			}
			var v any
			if v, err = reduce(fn, args); err != nil {
				return nil, u.fail("%v", err)
			}
			err = u.push(v)
		case 'b': // BUILD: state set on an OrderedDict (its _metadata) is dropped
			var state, obj any
			if state, err = u.pop(); err != nil {
				return nil, err
			}
			if obj, err = u.top(); err != nil {
				return nil, err
			}
			if _, ok := obj.(*pyDict); !ok {
				return nil, u.fail("BUILD of a %T", obj)
			}
			_ = state
		default:
			return nil, u.fail("opcode 0x%02x is not used by torch.save's state_dicts", op)
		}
		if err != nil {
			return nil, err
		}
	}
}

// line reads a GLOBAL's newline-terminated name.
func (u *unpickler) line() (string, error) {
	for i := u.pos; i < len(u.data) && i-u.pos < 256; i++ {
		if u.data[i] == '\n' {
			s := string(u.data[u.pos:i])
			u.pos = i + 1
			return s, nil
		}
	}
	return "", u.fail("GLOBAL name without a newline within 256 bytes")
}

// allowed are the globals a state_dict refers to.
var allowed = map[pyGlobal]bool{
	{"collections", "OrderedDict"}:         true,
	{"torch._utils", "_rebuild_tensor_v2"}: true,
	{"torch._utils", "_rebuild_parameter"}: true,
	{"torch", "FloatStorage"}:              true,
	{"torch", "DoubleStorage"}:             true,
	{"torch", "HalfStorage"}:               true,
	{"torch", "BFloat16Storage"}:           true,
	{"torch", "LongStorage"}:               true,
	{"torch", "IntStorage"}:                true,
	{"torch", "ShortStorage"}:              true,
	{"torch", "CharStorage"}:               true,
	{"torch", "ByteStorage"}:               true,
	{"torch", "BoolStorage"}:               true,
}

func (u *unpickler) global(mod, name string) error {
	g := pyGlobal{mod, name}
	if !allowed[g] {
		return u.fail("global %s.%s is not part of a state_dict", mod, name)
	}
	return u.push(g)
}

// long decodes LONG1's little-endian two's-complement bytes.
func long(b []byte) any {
	if len(b) <= 8 {
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		if len(b) > 0 && len(b) < 8 && b[len(b)-1]&0x80 != 0 {
			v |= ^uint64(0) << (8 * len(b))
		}
		return int64(v)
	}
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
