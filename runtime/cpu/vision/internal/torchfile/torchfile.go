// Package torchfile reads a PyTorch state_dict saved by torch.save, in
// both of its formats (torch/serialization.py): the zip archive of torch
// 1.6 and later (ARCHIVE/data.pkl, whose persistent ids name the storages
// ARCHIVE/data/KEY) and the legacy stream before it (pickles of the magic
// number, protocol version and system info, the state_dict, the sorted
// storage keys, then each storage as an element count and its bytes).
//
// The file may come from anyone: the pickle runs on a machine that knows
// only the operations and globals a state_dict uses (see unpickler), every
// size is bounded, and every tensor's extent is checked against its
// storage. Tensors come out as contiguous little-endian copies.
package torchfile

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"os"
	"sort"
	"strings"
)

// MaxFile bounds the files read (the FID Inception weights are 91 MiB).
const MaxFile = 1 << 30

// DType is a tensor element type, named after its storage class.
type DType string

// The storage classes torch.save names, by element type.
var storageTypes = map[string]DType{
	"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
	"LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
	"ByteStorage": "uint8", "BoolStorage": "bool",
}

// Size is the byte size of one element.
func (d DType) Size() int {
	switch d {
	case "float64", "int64":
		return 8
	case "float32", "int32":
		return 4
	case "float16", "bfloat16", "int16":
		return 2
	}
	return 1
}

// Tensor is one entry of a state_dict.
type Tensor struct {
	DType DType
	Shape []int
	// Data holds the elements, contiguous, little-endian.
	Data []byte
}

// Elements is the number of elements.
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// tensorRef is a tensor before its storage's bytes are known.
type tensorRef struct {
	storage *pyStorage
	offset  int64
	size    []int64
	stride  []int64
}

// ReadFile reads the state_dict in the file at path.
func ReadFile(path string) (map[string]*Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a state_dict may have here", path, st.Size(), MaxFile)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sd, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sd, nil
}

// Parse reads a state_dict from the bytes of a file.
func Parse(data []byte) (map[string]*Tensor, error) {
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return parseZip(data)
	}
	return parseLegacy(data)
}

func parseZip(data []byte) (map[string]*Tensor, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("zip archive: %v", err)
	}
	files := map[string]*zip.File{}
	prefix := ""
	for _, f := range zr.File {
		files[f.Name] = f
		if strings.HasSuffix(f.Name, "/data.pkl") && strings.Count(f.Name, "/") == 1 {
			prefix = strings.TrimSuffix(f.Name, "data.pkl")
		}
	}
	if prefix == "" {
		return nil, fmt.Errorf("zip archive without a top-level */data.pkl: not a torch.save file")
	}
	read := func(name string, limit uint64) ([]byte, error) {
		f := files[name]
		if f == nil {
			return nil, fmt.Errorf("zip archive has no %s", name)
		}
		// torch.save stores entries uncompressed, so none can be larger
		// than the file.
		if f.Method != zip.Store {
			return nil, fmt.Errorf("%s: compressed (method %d); torch.save stores its entries", name, f.Method)
		}
		limit = min(limit, uint64(len(data)))
		if f.UncompressedSize64 > limit {
			return nil, fmt.Errorf("%s: %d bytes, more than %d", name, f.UncompressedSize64, limit)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if uint64(len(b)) != f.UncompressedSize64 {
			return nil, fmt.Errorf("%s: %d bytes, the directory says %d", name, len(b), f.UncompressedSize64)
		}
		return b, nil
	}
	pkl, err := read(prefix+"data.pkl", 64<<20)
	if err != nil {
		return nil, err
	}
	if bo, ok := files[prefix+"byteorder"]; ok {
		b, err := read(bo.Name, 16)
		if err != nil {
			return nil, err
		}
		if string(b) != "little" {
			return nil, fmt.Errorf("byteorder %q: only little-endian files are read", b)
		}
	}
	storages := map[string]*pyStorage{}
	u := &unpickler{data: pkl, persist: func(pid any) (any, error) { return storageFromPID(pid, storages, 5) }}
	root, err := u.load()
	if err != nil {
		return nil, fmt.Errorf("data.pkl: %w", err)
	}
	bytesOf := map[string][]byte{}
	for key, s := range storages {
		b, err := read(prefix+"data/"+key, MaxFile)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) != s.numel*int64(s.dtype.Size()) {
			return nil, fmt.Errorf("storage %s: %d bytes for %d elements of %s", key, len(b), s.numel, s.dtype)
		}
		bytesOf[key] = b
	}
	return collect(root, bytesOf)
}

// legacyMagic is torch's MAGIC_NUMBER, 0x1950a86a20f9469cfc6c.
var legacyMagic, _ = new(big.Int).SetString("1950a86a20f9469cfc6c", 16)

func parseLegacy(data []byte) (map[string]*Tensor, error) {
	u := &unpickler{data: data}
	magic, err := u.load()
	if err != nil {
		return nil, fmt.Errorf("neither a zip archive nor a legacy torch.save stream: %w", err)
	}
	if m, ok := magic.(*big.Int); !ok || m.Cmp(legacyMagic) != 0 {
		return nil, fmt.Errorf("neither a zip archive nor a legacy torch.save stream (magic number %v)", magic)
	}
	if v, err := u.load(); err != nil || v != int64(1001) {
		return nil, fmt.Errorf("legacy protocol version %v (%v), want 1001", v, err)
	}
	info, err := u.load()
	if err != nil {
		return nil, fmt.Errorf("system info: %w", err)
	}
	if d, ok := info.(*pyDict); !ok || d.vals["little_endian"] != true {
		return nil, fmt.Errorf("system info %v: only little-endian files are read", info)
	}
	storages := map[string]*pyStorage{}
	u.persist = func(pid any) (any, error) { return storageFromPID(pid, storages, 6) }
	root, err := u.load()
	if err != nil {
		return nil, fmt.Errorf("state_dict: %w", err)
	}
	u.persist = nil
	keysV, err := u.load()
	if err != nil {
		return nil, fmt.Errorf("storage keys: %w", err)
	}
	kl, ok := keysV.(*pyList)
	if !ok {
		return nil, fmt.Errorf("storage keys: a %T, want a list", keysV)
	}
	bytesOf := map[string][]byte{}
	pos := u.pos
	for _, k := range kl.items {
		key, ok := k.(string)
		if !ok || storages[key] == nil {
			return nil, fmt.Errorf("storage key %v is not a storage of the state_dict", k)
		}
		s := storages[key]
		if pos+8 > len(data) {
			return nil, fmt.Errorf("storage %s: truncated before its size", key)
		}
		n := int64(binary.LittleEndian.Uint64(data[pos:]))
		pos += 8
		if n != s.numel {
			return nil, fmt.Errorf("storage %s: %d elements in the file, %d in the state_dict", key, n, s.numel)
		}
		size := n * int64(s.dtype.Size())
		if size > int64(len(data)-pos) {
			return nil, fmt.Errorf("storage %s: %d bytes, %d left in the file", key, size, len(data)-pos)
		}
		bytesOf[key] = data[pos : pos+int(size)]
		pos += int(size)
	}
	return collect(root, bytesOf)
}

// storageFromPID resolves ('storage', StorageType, key, location, numel)
// (plus view_metadata in legacy files, which must be None).
func storageFromPID(pid any, storages map[string]*pyStorage, n int) (any, error) {
	t, ok := pid.(pyTuple)
	if !ok || len(t) != n || t[0] != "storage" {
		return nil, fmt.Errorf("persistent id %v is not a %d-element storage reference", pid, n)
	}
	g, ok := t[1].(pyGlobal)
	dtype, known := storageTypes[g.name]
	if !ok || !known || g.module != "torch" {
		return nil, fmt.Errorf("storage type %v", t[1])
	}
	key, ok1 := t[2].(string)
	numel, ok2 := t[4].(int64)
	if !ok1 || !ok2 || numel < 0 || numel > MaxFile || key == "" || strings.ContainsAny(key, "/\\") || key == ".." {
		return nil, fmt.Errorf("storage reference %v", pid)
	}
	if n == 6 && t[5] != nil {
		return nil, fmt.Errorf("storage %s is a view; state_dicts of views are not read", key)
	}
	if s, ok := storages[key]; ok {
		if s.dtype != dtype || s.numel != numel {
			return nil, fmt.Errorf("storage %s named twice with different types or sizes", key)
		}
		return s, nil
	}
	s := &pyStorage{dtype: dtype, key: key, numel: numel}
	storages[key] = s
	return s, nil
}

// reduce applies one of the callables a state_dict's pickle calls.
func reduce(fn, args any) (any, error) {
	g, ok := fn.(pyGlobal)
	a, ok2 := args.(pyTuple)
	if !ok || !ok2 {
		return nil, fmt.Errorf("REDUCE of %T with %T", fn, args)
	}
	switch g {
	case pyGlobal{"collections", "OrderedDict"}:
		if len(a) != 0 {
			return nil, fmt.Errorf("OrderedDict with %d arguments", len(a))
		}
		return newDict(), nil
	case pyGlobal{"torch._utils", "_rebuild_parameter"}:
		if len(a) != 3 {
			return nil, fmt.Errorf("_rebuild_parameter with %d arguments", len(a))
		}
		if _, ok := a[0].(*tensorRef); !ok {
			return nil, fmt.Errorf("_rebuild_parameter of a %T", a[0])
		}
		return a[0], nil
	case pyGlobal{"torch._utils", "_rebuild_tensor_v2"}:
		if len(a) != 6 && len(a) != 7 {
			return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(a))
		}
		s, ok := a[0].(*pyStorage)
		off, ok1 := a[1].(int64)
		size, ok2 := ints(a[2])
		stride, ok3 := ints(a[3])
		if !ok || !ok1 || !ok2 || !ok3 || len(size) != len(stride) || off < 0 {
			return nil, fmt.Errorf("_rebuild_tensor_v2%v", a[:4])
		}
		return &tensorRef{storage: s, offset: off, size: size, stride: stride}, nil
	}
	return nil, fmt.Errorf("REDUCE of %s.%s", g.module, g.name)
}

func ints(v any) ([]int64, bool) {
	t, ok := v.(pyTuple)
	if !ok || len(t) > 8 {
		return nil, false
	}
	out := make([]int64, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 || n > MaxFile {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// collect turns the unpickled state_dict into tensors, checking each one's
// extent within its storage.
func collect(root any, bytesOf map[string][]byte) (map[string]*Tensor, error) {
	d, ok := root.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("the file holds a %T, not a state_dict", root)
	}
	out := make(map[string]*Tensor, len(d.keys))
	keys := make([]string, 0, len(d.keys))
	for _, k := range d.keys {
		name, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("state_dict key %v is not a string", k)
		}
		keys = append(keys, name)
	}
	sort.Strings(keys)
	for _, name := range keys {
		ref, ok := d.vals[name].(*tensorRef)
		if !ok {
			return nil, fmt.Errorf("state_dict entry %q is a %T, not a tensor", name, d.vals[name])
		}
		t, err := ref.materialize(bytesOf[ref.storage.key])
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func (r *tensorRef) materialize(storage []byte) (*Tensor, error) {
	es := int64(r.storage.dtype.Size())
	count, last := int64(1), r.offset
	shape := make([]int, len(r.size))
	for i, n := range r.size {
		shape[i] = int(n)
		if n == 0 {
			count = 0
		}
		if count > 0 && count > MaxFile/max(n, 1) {
			return nil, fmt.Errorf("shape %v is too large", r.size)
		}
		count *= n
		if n > 0 {
			last += (n - 1) * r.stride[i]
		}
	}
	t := &Tensor{DType: r.storage.dtype, Shape: shape}
	if count == 0 {
		t.Data = []byte{}
		return t, nil
	}
	// A state_dict's tensors never hold more elements than their storage
	// (an expanded, stride-0 tensor would, and is refused).
	if last >= r.storage.numel || count > r.storage.numel || int64(len(storage)) != r.storage.numel*es {
		return nil, fmt.Errorf("shape %v, strides %v at offset %d reach element %d of a %d-element storage", r.size, r.stride, r.offset, last, r.storage.numel)
	}
	if contiguous(r.size, r.stride) {
		t.Data = append([]byte(nil), storage[r.offset*es:(r.offset+count)*es]...)
		return t, nil
	}
	t.Data = make([]byte, count*es)
	// Walk the elements in row-major order.
	idx := make([]int64, len(r.size))
	for i := int64(0); i < count; i++ {
		src := r.offset
		for d := range idx {
			src += idx[d] * r.stride[d]
		}
		copy(t.Data[i*es:(i+1)*es], storage[src*es:(src+1)*es])
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < r.size[d] {
				break
			}
			idx[d] = 0
		}
	}
	return t, nil
}

// contiguous reports whether strides are the row-major ones of size.
func contiguous(size, stride []int64) bool {
	want := int64(1)
	for d := len(size) - 1; d >= 0; d-- {
		if size[d] != 1 && stride[d] != want {
			return false
		}
		want *= size[d]
	}
	return true
}
