package fid

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Array is a numeric NumPy array read as float64, in C (row-major) order.
type Array struct {
	Shape []int
	Data  []float64
}

// maxArrayElems bounds what an .npy header may announce: a 2048×2048
// covariance holds 4 Mi elements; 64 Mi leave room without letting a
// header ask for gigabytes.
const maxArrayElems = 64 << 20

// ParseNPY reads one .npy file (format versions 1-3) of little-endian
// float64 ('<f8') or float32 ('<f4') values in C or Fortran order, the
// dtypes NumPy writes for FID statistics. Anything else is an error that
// names what was found.
func ParseNPY(b []byte) (*Array, error) {
	const magic = "\x93NUMPY"
	if len(b) < len(magic)+4 || string(b[:len(magic)]) != magic {
		return nil, errors.New("not an .npy file (no \\x93NUMPY magic)")
	}
	major := b[6]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, errors.New(".npy header is cut short")
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return nil, fmt.Errorf(".npy format version %d.%d is not supported (1-3 are)", major, b[7])
	}
	if hlen < 0 || off+hlen > len(b) {
		return nil, fmt.Errorf(".npy header of %d bytes runs past the end of the file (%d bytes)", hlen, len(b))
	}
	h, err := parseHeader(string(b[off : off+hlen]))
	if err != nil {
		return nil, fmt.Errorf(".npy header: %w", err)
	}
	n := 1
	for _, d := range h.shape {
		if d < 0 || (d > 0 && n > maxArrayElems/d) {
			return nil, fmt.Errorf(".npy shape %v is larger than %d elements", h.shape, maxArrayElems)
		}
		n *= d
	}
	var size int
	switch h.descr {
	case "<f8":
		size = 8
	case "<f4":
		size = 4
	default:
		return nil, fmt.Errorf(".npy dtype %q: want little-endian float64 ('<f8') or float32 ('<f4')", h.descr)
	}
	body := b[off+hlen:]
	if len(body) != n*size {
		return nil, fmt.Errorf(".npy data is %d bytes; shape %v of %s needs %d", len(body), h.shape, h.descr, n*size)
	}
	data := make([]float64, n)
	for i := range data {
		if size == 8 {
			data[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[i*8:]))
		} else {
			data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(body[i*4:])))
		}
	}
	if h.fortran && len(h.shape) == 2 {
		r, c := h.shape[0], h.shape[1]
		t := make([]float64, n)
		for i := range r {
			for j := range c {
				t[i*c+j] = data[j*r+i]
			}
		}
		data = t
	} else if h.fortran && len(h.shape) > 2 {
		return nil, fmt.Errorf(".npy array of shape %v in Fortran order is not supported", h.shape)
	}
	return &Array{Shape: h.shape, Data: data}, nil
}

type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// parseHeader reads the Python dict literal of an .npy header:
// {'descr': '<f8', 'fortran_order': False, 'shape': (2048, 2048), }.
func parseHeader(s string) (npyHeader, error) {
	var h npyHeader
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return h, fmt.Errorf("%q is not a dict literal", clip(s))
	}
	s = s[1 : len(s)-1]
	seen := map[string]bool{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		key, rest, err := pyString(s)
		if err != nil {
			return h, err
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return h, fmt.Errorf("no ':' after key %q", key)
		}
		rest = strings.TrimSpace(rest[1:])
		switch key {
		case "descr":
			if h.descr, rest, err = pyString(rest); err != nil {
				return h, fmt.Errorf("descr: %w", err)
			}
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "True"):
				h.fortran, rest = true, rest[4:]
			case strings.HasPrefix(rest, "False"):
				h.fortran, rest = false, rest[5:]
			default:
				return h, fmt.Errorf("fortran_order is %q, want True or False", clip(rest))
			}
		case "shape":
			if h.shape, rest, err = pyTuple(rest); err != nil {
				return h, fmt.Errorf("shape: %w", err)
			}
		default:
			return h, fmt.Errorf("unknown key %q", key)
		}
		seen[key] = true
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, ",") {
			rest = rest[1:]
		} else if rest != "" {
			return h, fmt.Errorf("expected ',' after %s, found %q", key, clip(rest))
		}
		s = rest
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("no %q", k)
		}
	}
	return h, nil
}

func pyString(s string) (string, string, error) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, fmt.Errorf("expected a quoted string at %q", clip(s))
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", s, fmt.Errorf("unterminated string at %q", clip(s))
	}
	return s[1 : end+1], s[end+2:], nil
}

func pyTuple(s string) ([]int, string, error) {
	if !strings.HasPrefix(s, "(") {
		return nil, s, fmt.Errorf("expected a tuple at %q", clip(s))
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return nil, s, fmt.Errorf("unterminated tuple at %q", clip(s))
	}
	var dims []int
	for _, f := range strings.Split(s[1:end], ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(strings.TrimSuffix(f, "L"))
		if err != nil || d < 0 {
			return nil, s, fmt.Errorf("dimension %q is not a non-negative integer", f)
		}
		dims = append(dims, d)
	}
	if len(dims) > 8 {
		return nil, s, fmt.Errorf("%d dimensions; at most 8 are read", len(dims))
	}
	return dims, s[end+1:], nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// maxMemberBytes bounds one uncompressed .npz member (a 2048×2048
// float64 covariance is 32 MiB).
const maxMemberBytes = 256 << 20

// ParseNPZ reads the named arrays of an .npz archive (numpy.savez or
// savez_compressed: a zip of NAME.npy members). A missing name is an
// error that lists what the archive holds.
func ParseNPZ(b []byte, names ...string) (map[string]*Array, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("not an .npz archive: %w", err)
	}
	members := map[string]*zip.File{}
	var have []string
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		members[name] = f
		have = append(have, name)
	}
	out := map[string]*Array{}
	for _, name := range names {
		f, ok := members[name]
		if !ok {
			return nil, fmt.Errorf("no array %q in the archive (it holds %s)", name, strings.Join(have, ", "))
		}
		if f.UncompressedSize64 > maxMemberBytes {
			return nil, fmt.Errorf("array %q is %d bytes, larger than the %d-byte limit", name, f.UncompressedSize64, maxMemberBytes)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("array %q: %w", name, err)
		}
		raw, err := io.ReadAll(io.LimitReader(rc, maxMemberBytes+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("array %q: %w", name, err)
		}
		if len(raw) > maxMemberBytes {
			return nil, fmt.Errorf("array %q is larger than the %d-byte limit", name, maxMemberBytes)
		}
		a, err := ParseNPY(raw)
		if err != nil {
			return nil, fmt.Errorf("array %q: %w", name, err)
		}
		out[name] = a
	}
	return out, nil
}
