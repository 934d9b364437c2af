// Package dataset reads evaluation documents from local files: JSON Lines,
// CSV (with a header row, or with column names given by the caller, as
// MMLU's header-less CSVs need) and Parquet, with an optional mapping from
// the field names a task expects to the file's column names. Real benchmark
// datasets are never downloaded; users point at local copies.
//
// A row that cannot be parsed does not stop the load: it becomes a document
// whose Invalid error names the file and line, so that the runner reports
// it and keeps it in the denominator.
package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/units/hardened"
)

// Mapping maps a task's field name to the file's column name.
type Mapping map[string]string

// ParseMapping parses "task_field=column" pairs.
func ParseMapping(pairs []string) (Mapping, error) {
	m := Mapping{}
	for _, p := range pairs {
		for _, one := range strings.Split(p, ",") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			k, v, ok := strings.Cut(one, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("field mapping %q: want task_field=column", one)
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("field mapping: %q mapped twice", k)
			}
			m[k] = v
		}
	}
	return m, nil
}

// apply renames columns to task fields: every mapped task field takes the
// column's value (absent when the row lacks the column); other columns are
// kept under their own names.
func (m Mapping) apply(row map[string]any) map[string]any {
	if len(m) == 0 {
		return row
	}
	out := make(map[string]any, len(row)+len(m))
	for k, v := range row {
		out[k] = v
	}
	for field, col := range m {
		if v, ok := row[col]; ok {
			out[field] = v
		} else {
			delete(out, field)
		}
	}
	return out
}

// Options says how to read a file.
type Options struct {
	// Format is "jsonl", "csv" or "parquet"; empty picks it from the
	// extension (.jsonl/.json/.ndjson, .csv, .parquet).
	Format string
	// Mapping renames columns to task fields.
	Mapping Mapping
	// Columns names a header-less CSV's columns.
	Columns []string
	// MaxLineBytes bounds one JSONL line (16 MiB when 0).
	MaxLineBytes int
	// MaxRows, when positive, stops reading Parquet data after that many
	// rows (the first images of a split whose shards hold gigabytes).
	MaxRows int
}

// MaxFileBytes bounds one data file: every document of it is held in
// memory, and the largest shards of the evals we run are a few hundred
// megabytes.
const MaxFileBytes = 4 << 30

// openTimeout bounds opening a data file (checked and opened the hardened
// way, so only a hung file system comes near it).
const openTimeout = 10 * time.Second

// Open opens a data file the hardened way (units/hardened): a named pipe
// or a device node in its place is refused rather than waited on or read
// forever, and a file over MaxFileBytes rather than loaded. Every reader
// of eval data files (this package's, and the tasks that read their own
// formats) opens them here.
func Open(path string) (*os.File, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	f, err := hardened.Open(ctx, path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return f, nil
}

// ReadFile reads a whole data file as Open opens it.
func ReadFile(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	b, err := hardened.ReadFile(ctx, path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return b, nil
}

// Load reads path.
func Load(path string, opts Options) ([]evalsuite.Doc, error) {
	format := opts.Format
	if format == "" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".jsonl", ".json", ".ndjson":
			format = "jsonl"
		case ".csv":
			format = "csv"
		case ".parquet":
			format = "parquet"
		default:
			return nil, fmt.Errorf("dataset %s: cannot tell the format from the extension; pass the format (jsonl, csv or parquet)", path)
		}
	}
	if format == "parquet" {
		return ReadParquetFile(path, opts)
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := filepath.Base(path)
	switch format {
	case "jsonl":
		return ReadJSONL(f, name, opts)
	case "csv":
		return ReadCSV(f, name, opts)
	}
	return nil, fmt.Errorf("dataset %s: unknown format %q (want jsonl, csv or parquet)", path, format)
}

// ReadJSONL reads one JSON object per line; blank lines are skipped.
func ReadJSONL(r io.Reader, name string, opts Options) ([]evalsuite.Doc, error) {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 16 << 20
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var docs []evalsuite.Doc
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", name, line)
		doc := evalsuite.Doc{ID: len(docs), Source: src}
		var row map[string]any
		if err := json.Unmarshal(b, &row); err != nil {
			doc.Invalid = fmt.Errorf("%s: not a JSON object: %w", src, err)
		} else if row == nil {
			doc.Invalid = fmt.Errorf("%s: not a JSON object (null)", src)
		} else {
			doc.Fields = opts.Mapping.apply(row)
		}
		docs = append(docs, doc)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxLine)
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return docs, nil
}

// ReadCSV reads a CSV file whose first row names the columns, or, when
// opts.Columns is set, a header-less file with those columns.
func ReadCSV(r io.Reader, name string, opts Options) ([]evalsuite.Doc, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = false
	cols := opts.Columns
	line := 0
	if len(cols) == 0 {
		hdr, err := cr.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty CSV file (no header row)", name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: header: %w", name, err)
		}
		line, _ = cr.FieldPos(0)
		seen := map[string]bool{}
		for i, h := range hdr {
			h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
			if h == "" {
				return nil, fmt.Errorf("%s:%d: header column %d is empty", name, line, i+1)
			}
			if seen[h] {
				return nil, fmt.Errorf("%s:%d: header column %q repeated", name, line, h)
			}
			seen[h] = true
			cols = append(cols, h)
		}
	}
	var docs []evalsuite.Doc
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A quoting error leaves the reader unable to find the next
			// row reliably, so it fails the whole file.
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ = cr.FieldPos(0)
		src := fmt.Sprintf("%s:%d", name, line)
		doc := evalsuite.Doc{ID: len(docs), Source: src}
		if len(rec) != len(cols) {
			doc.Invalid = fmt.Errorf("%s: %d fields, want %d (%s)", src, len(rec), len(cols), strings.Join(cols, ","))
		} else {
			row := make(map[string]any, len(cols))
			for i, c := range cols {
				row[c] = rec[i]
			}
			doc.Fields = opts.Mapping.apply(row)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}
