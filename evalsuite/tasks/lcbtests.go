package tasks

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// LiveCodeBench keeps each problem's private tests as
// base64(zlib(pickle(json_text))): a Python pickle whose only object is a
// str holding the JSON list of tests. ttis never runs a pickle; it reads
// exactly the opcodes that pickling one str writes (protocols 2 to 5) and
// refuses any other opcode, so no object but a string can come out.

// maxLCBTestBytes bounds a problem's decompressed tests (the largest
// problems of release_v6 hold tens of megabytes of test data).
const maxLCBTestBytes = 512 << 20

// lcbTest is one test of a problem, as the dataset writes it.
type lcbTest struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	TestType string `json:"testtype"`
}

// decodeLCBPrivateTests reads the private_test_cases field: plain JSON
// (the first releases) or the compressed pickle, as the fork's
// transform_data_item tries them.
func decodeLCBPrivateTests(field string) ([]lcbTest, error) {
	var tests []lcbTest
	if json.Unmarshal([]byte(field), &tests) == nil {
		return tests, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(field))
	if err != nil {
		return nil, fmt.Errorf("neither a JSON list nor base64: %w", err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("base64 text that is not zlib data: %w", err)
	}
	defer zr.Close()
	pickled, err := io.ReadAll(io.LimitReader(zr, maxLCBTestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("zlib data: %w", err)
	}
	if len(pickled) > maxLCBTestBytes {
		return nil, fmt.Errorf("the tests decompress to more than %d MiB, the limit ttis reads", maxLCBTestBytes>>20)
	}
	text, err := UnpickleString(pickled)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(text), &tests); err != nil {
		return nil, fmt.Errorf("the pickled string is not a JSON list of tests: %w", err)
	}
	return tests, nil
}

// Pickle opcodes that pickle.dumps(str) writes at protocols 2 to 5.
const (
	opProto           = 0x80
	opFrame           = 0x95
	opShortBinUnicode = 0x8c
	opBinUnicode      = 'X'
	opBinUnicode8     = 0x8d
	opMemoize         = 0x94
	opBinPut          = 'q'
	opLongBinPut      = 'r'
	opStop            = '.'
)

// UnpickleString returns the str of a pickle that holds one str and
// nothing else. Any other opcode, a second object, a missing STOP or
// bytes after it is an error naming the offset: the reader builds no
// object but the string and calls nothing.
func UnpickleString(p []byte) (string, error) {
	var (
		pos   int
		value *string
	)
	need := func(n uint64, what string) ([]byte, error) {
		if n > uint64(len(p)-pos) {
			return nil, fmt.Errorf("pickle: %s at offset %d needs %d bytes, %d are left", what, pos, n, len(p)-pos)
		}
		b := p[pos : pos+int(n)]
		pos += int(n)
		return b, nil
	}
	str := func(n uint64) error {
		if value != nil {
			return fmt.Errorf("pickle: a second object at offset %d: ttis reads a pickle of one str", pos)
		}
		b, err := need(n, "a str")
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return fmt.Errorf("pickle: the str ending at offset %d is not UTF-8", pos)
		}
		s := string(b)
		value = &s
		return nil
	}
	for pos < len(p) {
		at := pos
		op := p[pos]
		pos++
		var err error
		switch op {
		case opProto:
			var b []byte
			if at != 0 {
				return "", fmt.Errorf("pickle: PROTO at offset %d, not at the start", at)
			}
			if b, err = need(1, "PROTO's version"); err == nil && (b[0] < 2 || b[0] > 5) {
				err = fmt.Errorf("pickle: protocol %d: ttis reads protocols 2 to 5", b[0])
			}
		case opFrame:
			// A frame only says how much the writer buffered; its
			// contents are ordinary opcodes read below.
			var b []byte
			if b, err = need(8, "FRAME's length"); err == nil && binary.LittleEndian.Uint64(b) > uint64(len(p)-pos) {
				err = fmt.Errorf("pickle: the frame at offset %d is longer than the data", at)
			}
		case opShortBinUnicode:
			var b []byte
			if b, err = need(1, "SHORT_BINUNICODE's length"); err == nil {
				err = str(uint64(b[0]))
			}
		case opBinUnicode:
			var b []byte
			if b, err = need(4, "BINUNICODE's length"); err == nil {
				err = str(uint64(binary.LittleEndian.Uint32(b)))
			}
		case opBinUnicode8:
			var b []byte
			if b, err = need(8, "BINUNICODE8's length"); err == nil {
				err = str(binary.LittleEndian.Uint64(b))
			}
		case opMemoize, opBinPut, opLongBinPut:
			// Memo entries only matter to later GETs, which a one-str
			// pickle has none of (and this reader refuses).
			if value == nil {
				return "", fmt.Errorf("pickle: memo opcode at offset %d before any object", at)
			}
			switch op {
			case opBinPut:
				_, err = need(1, "BINPUT's index")
			case opLongBinPut:
				_, err = need(4, "LONG_BINPUT's index")
			}
		case opStop:
			if value == nil {
				return "", fmt.Errorf("pickle: STOP at offset %d with no object", at)
			}
			if pos != len(p) {
				return "", fmt.Errorf("pickle: %d bytes after STOP at offset %d", len(p)-pos, at)
			}
			return *value, nil
		default:
			return "", fmt.Errorf("pickle: opcode 0x%02x at offset %d: ttis reads only a pickled str (PROTO, FRAME, the BINUNICODE forms, memo puts, STOP) and never runs other pickle code", op, at)
		}
		if err != nil {
			return "", err
		}
	}
	return "", errors.New("pickle: the data ends before STOP")
}
