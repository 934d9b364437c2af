package dataset

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/evalsuite"
)

// ReadParquetFile reads a Parquet file (the format Hugging Face datasets
// are published in) with parquet-go/parquet-go, using the file's own
// schema. Values are normalised to what JSON decoding yields (numbers as
// float64, lists as []any, byte arrays as text) so that tasks read every
// format alike; a row the library cannot decode ends the read with an
// error naming the row.
func ReadParquetFile(path string, opts Options) ([]evalsuite.Doc, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return ReadParquet(f, st.Size(), filepath.Base(path), opts)
}

// ReadParquet reads size bytes of Parquet data from r; name labels rows.
func ReadParquet(r io.ReaderAt, size int64, name string, opts Options) (docs []evalsuite.Doc, err error) {
	// The library panics on some malformed inputs; a bad file must be an
	// error, not a crash.
	defer func() {
		if p := recover(); p != nil {
			docs, err = nil, fmt.Errorf("%s: malformed parquet data: %v", name, p)
		}
	}()
	// The file's structure is checked first: parquet-go allocates the
	// sizes and counts a file states (see parquetcheck.go).
	pf, err := checkedOpen(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rd := parquet.NewReader(pf, pf.Schema())
	defer rd.Close()
	for i := 0; opts.MaxRows <= 0 || i < opts.MaxRows; i++ {
		row := map[string]any{}
		if err := rd.Read(&row); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: row %d: %w", name, i, err)
		}
		fields, _ := normalize(row).(map[string]any)
		docs = append(docs, evalsuite.Doc{ID: i, Source: fmt.Sprintf("%s:row %d", name, i), Fields: opts.Mapping.apply(fields)})
	}
	return docs, nil
}

// normalize converts parquet-go's Go values to JSON-decoding shapes.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []byte:
		return string(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	default:
		return v
	}
}

// ParquetKeyValue returns a key of a Parquet file's key-value metadata:
// Hugging Face datasets keep their features (a ClassLabel's names) under
// "huggingface". ok is false when the file has no such key.
func ParquetKeyValue(path, key string) (value string, ok bool, err error) {
	f, err := Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("dataset: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			value, ok, err = "", false, fmt.Errorf("%s: malformed parquet data: %v", filepath.Base(path), p)
		}
	}()
	pf, err := checkedOpen(f, st.Size())
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	value, ok = pf.Lookup(key)
	return value, ok, nil
}
