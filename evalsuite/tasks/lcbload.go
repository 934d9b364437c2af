package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
)

// LiveCodeBench's rows are large (the compressed private tests run to
// megabytes a row, gigabytes across release_v6), so the JSONL files are
// read with the private tests left on disk: a document holds where its
// line is, and grading reads the line again.

// maxLCBLine bounds one row of the JSONL files.
const maxLCBLine = 1 << 30

// lcbPrivateRef stands for a row's private_test_cases in Doc.Fields.
type lcbPrivateRef struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Bytes  int    `json:"bytes"`
}

// loadLCB reads the test split: one file as it is, or, from the folder
// evalsuite/taskdata makes of the pulled files (NNNNN-<name>), the six
// files the fork loads (a later release's test7.jsonl is not part of
// release_v6).
func loadLCB(src Source) ([]evalsuite.Doc, error) {
	if src.Dataset == "" {
		return nil, nil
	}
	st, err := os.Stat(src.Dataset)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	files := []string{src.Dataset}
	if st.IsDir() {
		entries, err := os.ReadDir(src.Dataset)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		known := map[string]bool{}
		for _, f := range lcbFiles {
			known[f] = true
		}
		files = nil
		for _, e := range entries {
			name := e.Name()
			if len(name) > 6 && name[5] == '-' && strings.Trim(name[:5], "0123456789") == "" {
				name = name[6:]
			}
			if known[name] {
				files = append(files, filepath.Join(src.Dataset, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("dataset %s: none of LiveCodeBench's release_v6 files (%s) is in the folder", src.Dataset, strings.Join(lcbFiles, ", "))
		}
		sort.Strings(files)
	}
	var docs []evalsuite.Doc
	for _, f := range files {
		var part []evalsuite.Doc
		if src.Format == "" && len(src.Mapping) == 0 && strings.EqualFold(filepath.Ext(f), ".jsonl") {
			part, err = readLCBJSONL(f)
		} else {
			part, err = dataset.Load(f, dataset.Options{Format: src.Format, Mapping: src.Mapping, Columns: src.Columns, MaxLineBytes: maxLCBLine})
		}
		if err != nil {
			return nil, err
		}
		for _, d := range part {
			d.ID = len(docs)
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// readLCBJSONL reads one JSONL file, every field but private_test_cases
// kept in memory.
func readLCBJSONL(path string) ([]evalsuite.Doc, error) {
	f, err := dataset.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLCBRows(f, path)
}

// readLCBRows reads the rows of r, the contents of path.
func readLCBRows(r io.Reader, path string) ([]evalsuite.Doc, error) {
	name := filepath.Base(path)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLCBLine)
	var consumed, start int64
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		start = consumed
		consumed += int64(adv)
		return adv, tok, err
	})
	var docs []evalsuite.Doc
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", name, line)
		doc := evalsuite.Doc{ID: len(docs), Source: src}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
			doc.Invalid = fmt.Errorf("%s: not a JSON object", src)
			if err != nil {
				doc.Invalid = fmt.Errorf("%s: not a JSON object: %w", src, err)
			}
			docs = append(docs, doc)
			continue
		}
		doc.Fields = map[string]any{}
		for k, v := range raw {
			if k == "private_test_cases" {
				doc.Fields[k] = lcbPrivateRef{File: path, Offset: start, Bytes: len(b)}
				continue
			}
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				doc.Invalid = fmt.Errorf("%s: field %q: %w", src, k, err)
			}
			doc.Fields[k] = x
		}
		docs = append(docs, doc)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: line %d: %w (rows of at most %d MiB are read)", path, line+1, err, maxLCBLine>>20)
	}
	return docs, nil
}

// lcbPrivateField returns a document's private_test_cases text, read
// back from its file when the loader left it there.
func lcbPrivateField(d evalsuite.Doc) (string, error) {
	ref, ok := d.Fields["private_test_cases"].(lcbPrivateRef)
	if !ok {
		return d.Str("private_test_cases")
	}
	f, err := dataset.Open(ref.File)
	if err != nil {
		return "", fmt.Errorf("%s: private tests: %w", d.Source, err)
	}
	defer f.Close()
	b := make([]byte, ref.Bytes)
	if _, err := f.ReadAt(b, ref.Offset); err != nil && err != io.EOF {
		return "", fmt.Errorf("%s: private tests: %w", d.Source, err)
	}
	var row struct {
		QuestionID *string `json:"question_id"`
		Private    string  `json:"private_test_cases"`
	}
	if err := json.Unmarshal(b, &row); err != nil {
		return "", fmt.Errorf("%s: private tests: the file changed since it was read (%v); load the dataset again", d.Source, err)
	}
	if id, _ := d.Fields["question_id"].(string); row.QuestionID != nil && *row.QuestionID != id {
		return "", fmt.Errorf("%s: private tests: the file changed since it was read (question_id %q, loaded %q); load the dataset again", d.Source, *row.QuestionID, id)
	}
	return row.Private, nil
}
