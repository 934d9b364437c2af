package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadJSONLWithMapping(t *testing.T) {
	in := `{"q": "What is 2+2?", "a": "#### 4"}

not json
{"q": "What is 3+3?"}
null
`
	m, err := ParseMapping([]string{"question=q,answer=a"})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := ReadJSONL(strings.NewReader(in), "x.jsonl", Options{Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 {
		t.Fatalf("%d docs, want 4 (blank line skipped, bad rows kept)", len(docs))
	}
	q, err := docs[0].Str("question")
	if err != nil || q != "What is 2+2?" {
		t.Fatalf("doc 0 question = %q, %v", q, err)
	}
	if docs[1].Invalid == nil || !strings.Contains(docs[1].Invalid.Error(), "x.jsonl:3") {
		t.Errorf("doc 1 should be invalid at x.jsonl:3, got %v", docs[1].Invalid)
	}
	if _, err := docs[2].Str("answer"); err == nil || !strings.Contains(err.Error(), `x.jsonl:4: missing field "answer"`) {
		t.Errorf("doc 2 answer error = %v", err)
	}
	if docs[3].Invalid == nil {
		t.Error("a JSON null row must be invalid")
	}
	for i, d := range docs {
		if d.ID != i {
			t.Errorf("doc %d has ID %d", i, d.ID)
		}
	}
}

func TestReadCSV(t *testing.T) {
	in := "question,A,B,C,D,answer\n\"Capital of France?\",Paris,Rome,Oslo,Bern,A\nshort,row\n"
	docs, err := ReadCSV(strings.NewReader(in), "m.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d docs", len(docs))
	}
	if v, _ := docs[0].Str("B"); v != "Rome" {
		t.Errorf("B = %q", v)
	}
	if docs[1].Invalid == nil || !strings.Contains(docs[1].Invalid.Error(), "m.csv:3: 2 fields, want 6") {
		t.Errorf("short row error = %v", docs[1].Invalid)
	}
	// Header-less, as MMLU ships its CSVs.
	docs, err = ReadCSV(strings.NewReader("Q1,a,b,c,d,C\n"), "h.csv", Options{Columns: []string{"question", "A", "B", "C", "D", "answer"}})
	if err != nil || len(docs) != 1 {
		t.Fatal(docs, err)
	}
	if v, _ := docs[0].Str("answer"); v != "C" {
		t.Errorf("answer = %q", v)
	}
	for _, bad := range []string{"", "a,,b\n", "a,a\n", "a\n\"unterminated\n"} {
		if _, err := ReadCSV(strings.NewReader(bad), "b.csv", Options{}); err == nil {
			t.Errorf("want an error for %q", bad)
		}
	}
}

func TestLoadByExtension(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	if err := os.WriteFile(p, []byte(`{"a":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := Load(p, Options{})
	if err != nil || len(docs) != 1 {
		t.Fatal(docs, err)
	}
	if n, err := docs[0].Int("a"); err != nil || n != 1 {
		t.Errorf("a = %d, %v", n, err)
	}
	if _, err := Load(filepath.Join(dir, "d.txt"), Options{}); err == nil {
		t.Error("want an error for an unknown extension")
	}
	if _, err := Load(filepath.Join(dir, "missing.jsonl"), Options{}); err == nil {
		t.Error("want an error for a missing file")
	}
}

func TestParseMappingErrors(t *testing.T) {
	for _, bad := range []string{"x", "=y", "x=", "a=b,a=c"} {
		if _, err := ParseMapping([]string{bad}); err == nil {
			t.Errorf("want an error for %q", bad)
		}
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte("{\"a\": 1}\n{\"b\": [1,2]}\n"))
	f.Add([]byte("garbage\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := ReadJSONL(strings.NewReader(string(data)), "f.jsonl", Options{Mapping: Mapping{"x": "a"}})
		if err != nil {
			return
		}
		for i, d := range docs {
			if d.ID != i || (d.Invalid == nil && d.Fields == nil) {
				t.Fatalf("doc %d: id %d, fields %v, invalid %v", i, d.ID, d.Fields, d.Invalid)
			}
			_, _ = d.Str("x")
			_, _ = d.Int("x")
			_, _ = d.Strings("x")
		}
	})
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("a,b\n1,2\n3\n"))
	f.Add([]byte("\"x\"\"\",y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := ReadCSV(strings.NewReader(string(data)), "f.csv", Options{})
		if err != nil {
			return
		}
		for i, d := range docs {
			if d.ID != i || (d.Invalid == nil && d.Fields == nil) {
				t.Fatalf("doc %d: id %d, fields %v, invalid %v", i, d.ID, d.Fields, d.Invalid)
			}
		}
	})
}

// A named pipe or a device node given as a data file (or in a dataset
// folder) is refused with what it is, not waited on or read forever.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.parquet")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"pipe.jsonl":   "not a regular file (a named pipe)",
		"zero.parquet": "not a regular file (a device node)",
	} {
		path := filepath.Join(dir, name)
		done := make(chan error, 1)
		go func() {
			_, err := Load(path, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != "dataset: "+path+": "+want {
				t.Errorf("%s: %v, want %q", name, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Load(%s) blocked for 30s", name)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadDir(dir, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("LoadDir of a folder with a pipe: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("LoadDir blocked for 30s")
	}
}
