package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Limits on what a Parquet dataset file may make the reader allocate.
// parquet-go trusts the sizes and counts a file states (a thrift list or
// string length, a page's compressed size, a gzip stream's output) and
// allocates them before reading, so a few hostile bytes could ask for
// gigabytes. checkParquet walks the file's structure first, with its own
// non-allocating thrift reader, and rejects anything beyond these; eval
// datasets are a few megabytes, far inside them.
const (
	// maxParquetFooter bounds the file metadata.
	maxParquetFooter = 8 << 20
	// maxThriftElements bounds list, set and map entries in one thrift
	// structure (the footer: schema elements, row groups, column chunks).
	maxThriftElements = 200_000
	// maxThriftDepth bounds nested structures and lists.
	maxThriftDepth = 32
	// maxPageHeader bounds one page header.
	maxPageHeader = 1 << 20
	// maxPageBytes bounds one page, compressed or not.
	maxPageBytes = 64 << 20
	// maxDecompressed bounds the uncompressed pages of the whole file.
	maxDecompressed = 1 << 30
	// maxPages bounds the pages of the whole file.
	maxPages = 1_000_000
	// maxPageValues bounds the values of one page.
	maxPageValues = 16 << 20
	// maxRows bounds the rows of the file.
	maxRows = 10_000_000
	// maxColumns bounds leaf columns; maxSchemaDepth the nesting of the
	// schema (a list of structs of lists ...).
	maxColumns     = 10_000
	maxSchemaDepth = 16
)

var errTooLarge = errors.New("exceeds the reader's limits")

// checkParquetFooter validates the footer's framing and thrift structure
// before parquet-go decodes it.
func checkParquetFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("not a parquet file: %d bytes", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return errors.New("not a parquet file (no PAR1 at the end; encrypted files are not read)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fmt.Errorf("footer of %d bytes does not fit in a %d-byte file", n, size)
	}
	if n > maxParquetFooter {
		return fmt.Errorf("footer of %d bytes %w (%d)", n, errTooLarge, maxParquetFooter)
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	s := &skimmer{data: footer}
	if err := s.structure(0, nil); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	return nil
}

// checkParquetPages validates the file's metadata and every page header,
// and decompresses each page with a bounded output, before parquet-go
// reads the pages.
func checkParquetPages(r io.ReaderAt, size int64, md *format.FileMetaData) error {
	if md.NumRows < 0 || md.NumRows > maxRows {
		return fmt.Errorf("%d rows %w (%d)", md.NumRows, errTooLarge, maxRows)
	}
	if err := checkSchema(md.Schema); err != nil {
		return err
	}
	var total int64
	pages := 0
	for gi, g := range md.RowGroups {
		for ci, cc := range g.Columns {
			if cc.FilePath != "" {
				return fmt.Errorf("row group %d column %d: column data in another file (%q) is not read", gi, ci, cc.FilePath)
			}
			m := &cc.MetaData
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			end := start + m.TotalCompressedSize
			if start < 4 || m.TotalCompressedSize < 0 || end > size-8 || end < start {
				return fmt.Errorf("row group %d column %d: data at %d+%d lies outside the file", gi, ci, start, m.TotalCompressedSize)
			}
			switch m.Codec {
			case format.Uncompressed, format.Snappy, format.Gzip, format.Zstd:
			default:
				return fmt.Errorf("row group %d column %d: compression %v is not read (use snappy, gzip, zstd or none)", gi, ci, m.Codec)
			}
			for pos := start; pos < end; {
				pages++
				if pages > maxPages {
					return fmt.Errorf("more than %d pages %w", maxPages, errTooLarge)
				}
				next, uncompressed, err := checkPage(r, pos, end, m.Codec)
				if err != nil {
					return fmt.Errorf("row group %d column %d page at %d: %w", gi, ci, pos, err)
				}
				total += uncompressed
				if total > maxDecompressed {
					return fmt.Errorf("uncompressed pages of more than %d bytes %w", maxDecompressed, errTooLarge)
				}
				pos = next
			}
		}
	}
	return nil
}

// checkSchema bounds the schema's columns and nesting; a schema whose
// child counts do not add up is malformed.
func checkSchema(schema []format.SchemaElement) error {
	if len(schema) == 0 {
		return errors.New("empty schema")
	}
	if len(schema) > maxColumns {
		return fmt.Errorf("%d schema elements %w (%d)", len(schema), errTooLarge, maxColumns)
	}
	i := 0
	var walk func(depth int) error
	walk = func(depth int) error {
		if depth > maxSchemaDepth {
			return fmt.Errorf("schema nested deeper than %d levels %w", maxSchemaDepth, errTooLarge)
		}
		if i >= len(schema) {
			return errors.New("schema: child counts exceed the elements")
		}
		n := int(schema[i].NumChildren.V)
		i++
		if n < 0 || n > len(schema) {
			return errors.New("schema: bad child count")
		}
		for range n {
			if err := walk(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(0); err != nil {
		return err
	}
	if i != len(schema) {
		return errors.New("schema: elements outside the tree")
	}
	return nil
}

// Thrift field ids of format.PageHeader and its page headers.
const (
	phUncompressed = 2
	phCompressed   = 3
	phData         = 5
	phDictionary   = 7
	phDataV2       = 8
	// num_values is field 1 of each page header kind; in a v2 header the
	// levels' byte lengths (5, 6) precede the compressed values, and
	// field 7 says whether the values are compressed at all.
	phNumValues   = 1
	phV2DefLen    = 5
	phV2RepLen    = 6
	phV2Compresed = 7
)

// checkPage reads the page header at pos (before end), checks its sizes
// and counts, and decompresses the page into a bounded buffer to prove it
// holds no more than it states. It returns where the next page starts and
// the page's uncompressed size.
func checkPage(r io.ReaderAt, pos, end int64, codec format.CompressionCodec) (int64, int64, error) {
	hbuf := make([]byte, min(end-pos, maxPageHeader))
	if n, err := r.ReadAt(hbuf, pos); n < len(hbuf) {
		return 0, 0, fmt.Errorf("read page header: %w", err)
	}
	s := &skimmer{data: hbuf, fields: map[[2]int16]int64{}}
	if err := s.structure(0, nil); err != nil {
		return 0, 0, fmt.Errorf("page header: %w", err)
	}
	f := s.fields
	compressed, uncompressed := f[[2]int16{phCompressed}], f[[2]int16{phUncompressed}]
	if compressed < 0 || uncompressed < 0 {
		return 0, 0, errors.New("negative page size")
	}
	if compressed > maxPageBytes || uncompressed > maxPageBytes {
		return 0, 0, fmt.Errorf("page of %d bytes (%d uncompressed) %w (%d)", compressed, uncompressed, errTooLarge, maxPageBytes)
	}
	body := pos + int64(s.pos)
	if compressed > end-body {
		return 0, 0, fmt.Errorf("page of %d bytes runs past its column chunk", compressed)
	}
	for _, kind := range []int16{phData, phDictionary, phDataV2} {
		if v := f[[2]int16{kind, phNumValues}]; v < 0 || v > maxPageValues {
			return 0, 0, fmt.Errorf("page of %d values %w (%d)", v, errTooLarge, maxPageValues)
		}
	}
	page := make([]byte, compressed)
	if n, err := r.ReadAt(page, body); n < len(page) {
		return 0, 0, fmt.Errorf("read page: %w", err)
	}
	if _, v2 := s.seen[phDataV2]; v2 {
		levels := f[[2]int16{phDataV2, phV2DefLen}] + f[[2]int16{phDataV2, phV2RepLen}]
		if levels < 0 || levels > compressed || levels > uncompressed {
			return 0, 0, errors.New("v2 page levels longer than the page")
		}
		page, uncompressed = page[levels:], uncompressed-levels
		if c, ok := f[[2]int16{phDataV2, phV2Compresed}]; ok && c == 0 {
			codec = format.Uncompressed
		}
	}
	if err := checkDecompressed(codec, page, uncompressed); err != nil {
		return 0, 0, err
	}
	return body + compressed, uncompressed, nil
}

// checkDecompressed decompresses page with its output bounded by the size
// the page header states, and fails if there is more.
func checkDecompressed(codec format.CompressionCodec, page []byte, size int64) error {
	var rd io.Reader
	switch codec {
	case format.Uncompressed:
		return nil
	case format.Snappy:
		// snappy.Decode allocates the length the block states.
		n, err := snappy.DecodedLen(page)
		if err != nil {
			return fmt.Errorf("snappy page: %w", err)
		}
		if int64(n) > size {
			return fmt.Errorf("snappy page holds %d bytes, more than the %d its header states", n, size)
		}
		return nil
	case format.Gzip:
		z, err := gzip.NewReader(bytes.NewReader(page))
		if err != nil {
			return fmt.Errorf("gzip page: %w", err)
		}
		defer z.Close()
		rd = z
	case format.Zstd:
		z, err := zstd.NewReader(bytes.NewReader(page), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxPageBytes)), zstd.WithDecoderMaxWindow(uint64(maxPageBytes)))
		if err != nil {
			return fmt.Errorf("zstd page: %w", err)
		}
		defer z.Close()
		rd = z
	default:
		return fmt.Errorf("compression %v is not read", codec)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(rd, size+1))
	if err != nil {
		return fmt.Errorf("%v page: %w", codec, err)
	}
	if n > size {
		return fmt.Errorf("%v page holds more than the %d bytes its header states", codec, size)
	}
	return nil
}

// skimmer walks thrift compact-protocol data without allocating what it
// states: every length and count is checked against the bytes left, the
// entries of all lists together against maxThriftElements, and nesting
// against maxThriftDepth. fields, when set, receives the integer fields at
// the top two levels of the structure, keyed by their field ids ({2, 0}
// for top-level field 2; {5, 1} for field 1 of the structure in field 5);
// seen records the top-level field ids.
type skimmer struct {
	data     []byte
	pos      int
	elements int
	fields   map[[2]int16]int64
	seen     map[int16]bool
}

var errShort = errors.New("truncated thrift data")

func (s *skimmer) byte() (byte, error) {
	if s.pos >= len(s.data) {
		return 0, errShort
	}
	b := s.data[s.pos]
	s.pos++
	return b, nil
}

func (s *skimmer) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.data[s.pos:])
	if n <= 0 {
		return 0, errShort
	}
	s.pos += n
	return v, nil
}

func (s *skimmer) skip(n uint64) error {
	if n > uint64(len(s.data)-s.pos) {
		return fmt.Errorf("length %d runs past the data: %w", n, errShort)
	}
	s.pos += int(n)
	return nil
}

// structure walks one struct; path holds the ids of the enclosing fields.
func (s *skimmer) structure(depth int, path []int16) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("thrift nested deeper than %d %w", maxThriftDepth, errTooLarge)
	}
	if s.seen == nil {
		s.seen = map[int16]bool{}
	}
	var id int16
	for {
		b, err := s.byte()
		if err != nil {
			return err
		}
		if b == 0 {
			return nil
		}
		typ := b & 0x0f
		if delta := b >> 4; delta != 0 {
			id += int16(delta)
		} else {
			v, err := s.uvarint()
			if err != nil {
				return err
			}
			id = int16(int64(v>>1) ^ -int64(v&1))
		}
		fieldPath := append(path[:len(path):len(path)], id)
		if len(fieldPath) == 1 {
			s.seen[id] = true
		}
		if err := s.value(typ, depth, fieldPath); err != nil {
			return err
		}
	}
}

func (s *skimmer) value(typ byte, depth int, path []int16) error {
	record := func(v int64) {
		if s.fields != nil && len(path) <= 2 {
			var k [2]int16
			copy(k[:], path)
			s.fields[k] = v
		}
	}
	switch typ {
	case 1, 2: // bool as a field type: the value is in the type
		record(int64(2 - typ))
		return nil
	case 3: // byte
		return s.skip(1)
	case 4, 5, 6: // i16, i32, i64: zigzag varints
		v, err := s.uvarint()
		if err != nil {
			return err
		}
		record(int64(v>>1) ^ -int64(v&1))
		return nil
	case 7: // double
		return s.skip(8)
	case 8: // binary
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		return s.skip(n)
	case 9, 10: // list, set
		b, err := s.byte()
		if err != nil {
			return err
		}
		n := uint64(b >> 4)
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		return s.entries(n, []byte{b & 0x0f}, depth, path)
	case 11: // map
		n, err := s.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		return s.entries(n, []byte{kv >> 4, kv & 0x0f}, depth, path)
	case 12: // struct
		return s.structure(depth+1, path)
	default:
		return fmt.Errorf("unknown thrift type %d", typ)
	}
}

// entries walks n list or map entries of the given element types. Every
// entry takes at least one byte, so n is checked against the bytes left
// before anything else.
func (s *skimmer) entries(n uint64, types []byte, depth int, path []int16) error {
	if depth+1 > maxThriftDepth {
		return fmt.Errorf("thrift nested deeper than %d %w", maxThriftDepth, errTooLarge)
	}
	if n > uint64(len(s.data)-s.pos) {
		return fmt.Errorf("%d entries run past the data: %w", n, errShort)
	}
	s.elements += int(n)
	if s.elements > maxThriftElements {
		return fmt.Errorf("more than %d thrift entries %w", maxThriftElements, errTooLarge)
	}
	for range n {
		for _, t := range types {
			if t == 1 || t == 2 {
				// A bool inside a list or map takes a byte.
				if err := s.skip(1); err != nil {
					return err
				}
				continue
			}
			// Entries are not recorded as fields.
			if err := s.value(t, depth+1, append(path[:len(path):len(path)], -1, -1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkedOpen opens a Parquet file for reading after checking its footer,
// then its pages.
func checkedOpen(r io.ReaderAt, size int64) (*parquet.File, error) {
	if err := checkParquetFooter(r, size); err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, err
	}
	if err := checkParquetPages(r, size, pf.Metadata()); err != nil {
		return nil, err
	}
	return pf, nil
}
