package dataset

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// mmluRow has cais/mmlu's parquet schema.
type mmluRow struct {
	Question string   `parquet:"question"`
	Subject  *string  `parquet:"subject,optional"`
	Choices  []string `parquet:"choices,list"`
	Answer   int64    `parquet:"answer"`
}

func TestReadParquet(t *testing.T) {
	subj := "astronomy"
	var buf bytes.Buffer
	rows := []mmluRow{{"Which planet is largest?", &subj, []string{"Mars", "Jupiter", "Venus", "Earth"}, 1}, {"2+2?", nil, []string{"3", "4"}, 1}}
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "test.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := Load(p, Options{Mapping: Mapping{"topic": "subject"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d docs", len(docs))
	}
	choices, err := docs[0].Strings("choices")
	if err != nil || len(choices) != 4 || choices[1] != "Jupiter" {
		t.Errorf("choices %v %v", choices, err)
	}
	if n, err := docs[0].Int("answer"); err != nil || n != 1 {
		t.Errorf("answer %d %v", n, err)
	}
	if s, _ := docs[0].Str("topic"); s != "astronomy" {
		t.Errorf("mapped subject %q", s)
	}
	if _, err := docs[1].Str("topic"); err == nil {
		t.Error("a null optional value is a missing field")
	}
	if _, err := ReadParquet(bytes.NewReader([]byte("PAR1 not really")), 15, "bad.parquet", Options{}); err == nil {
		t.Error("want an error for a broken file")
	}
}

func FuzzReadParquet(f *testing.F) {
	var buf bytes.Buffer
	s := "x"
	if err := parquet.Write(&buf, []mmluRow{{"q", &s, []string{"a"}, 0}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("PAR1PAR1"))
	// The same rows compressed each way the reader accepts, and in v2
	// pages: seeds that reach the page checks and the decoders.
	for _, o := range []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.Compression(&parquet.Gzip), parquet.Compression(&parquet.Zstd), parquet.DataPageVersion(2)} {
		f.Add(parquetBytes(f, o))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := ReadParquet(bytes.NewReader(data), int64(len(data)), "f.parquet", Options{})
		if err != nil {
			return
		}
		for i, d := range docs {
			if d.ID != i {
				t.Fatalf("doc %d has id %d", i, d.ID)
			}
		}
	})
}

func parquetBytes(tb testing.TB, opts ...parquet.WriterOption) []byte {
	tb.Helper()
	subj := "astronomy"
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[mmluRow](&buf, opts...)
	if _, err := w.Write([]mmluRow{{"Which planet is largest?", &subj, []string{"Mars", "Jupiter"}, 1}, {"2+2?", nil, []string{"3", "4"}, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// Sizes and counts a file states are checked before anything is
// allocated for them: each of these asked parquet-go for gigabytes.
func TestReadParquetBounded(t *testing.T) {
	for _, o := range []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.Compression(&parquet.Gzip), parquet.Compression(&parquet.Zstd), parquet.DataPageVersion(2)} {
		data := parquetBytes(t, o)
		if docs, err := ReadParquet(bytes.NewReader(data), int64(len(data)), "ok.parquet", Options{}); err != nil || len(docs) != 2 {
			t.Fatalf("a well-formed file: %d docs, %v", len(docs), err)
		}
	}
	good := parquetBytes(t)
	footer := func(data []byte, n uint32) []byte {
		out := bytes.Clone(data)
		binary.LittleEndian.PutUint32(out[len(out)-8:], n)
		return out
	}
	// file frames a footer: "PAR1", the footer, its length, "PAR1".
	file := func(footer []byte, n uint32) []byte {
		out := append([]byte("PAR1"), footer...)
		out = binary.LittleEndian.AppendUint32(out, n)
		return append(out, "PAR1"...)
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"footer of 4 GiB":   {footer(good, 0xffffffff), "does not fit"},
		"footer over limit": {file(make([]byte, maxParquetFooter+1), maxParquetFooter+1), "exceeds the reader's limits"},
		// A struct whose field 1 is a list claiming 2^31-1 i32 entries.
		"huge thrift list": {file([]byte("\x19\xf5\xff\xff\xff\xff\x07\x00"), 8), "entries run past the data"},
		// A struct whose field 1 is a string claiming 2^31-1 bytes.
		"huge thrift string": {file([]byte("\x18\xff\xff\xff\xff\x07\x00"), 7), "runs past the data"},
	}
	for name, c := range cases {
		_, err := ReadParquet(bytes.NewReader(c.data), int64(len(c.data)), "bad.parquet", Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
