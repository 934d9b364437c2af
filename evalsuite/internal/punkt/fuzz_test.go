package punkt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTokenize feeds arbitrary text to the tokenizer with the trained
// test parameters: it never panics, and its sentences are non-empty
// pieces of the text, in order and not overlapping.
func FuzzTokenize(f *testing.F) {
	p, err := Load(filepath.Join("testdata", "trained"))
	if err != nil {
		f.Fatal(err)
	}
	z := New(p)
	train, err := os.ReadFile("testdata/train.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(train))
	for _, s := range []string{"", "Mr. Smith. J. S. Bach.", "\"Hi.\" (Yes.) x", ". . . . .", "a.'-- b", "\xff.\n\x1f.  Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		rest := string([]rune(text)) // sentences come back as valid UTF-8
		for _, s := range z.Tokenize(text) {
			if s == "" {
				t.Fatalf("empty sentence from %q", text)
			}
			i := strings.Index(rest, s)
			if i < 0 {
				t.Fatalf("sentence %q not found in order in %q", s, text)
			}
			rest = rest[i+len(s):]
		}
	})
}

// FuzzLoad feeds arbitrary bytes as each punkt_tab file: Load returns
// parameters or an error naming the file, never panics.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{AbbrevFile, CollocationsFile, SentStartersFile, OrthoContextFile} {
		seed, err := os.ReadFile(filepath.Join("testdata", "trained", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name, seed)
	}
	f.Add(OrthoContextFile, []byte("a\tb\n"))
	f.Add(CollocationsFile, []byte("a\tb\tc\r\n"))
	f.Add(AbbrevFile, []byte("\xff\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		dir := t.TempDir()
		for _, n := range []string{AbbrevFile, CollocationsFile, SentStartersFile, OrthoContextFile} {
			body := []byte("x\n")
			if strings.HasSuffix(n, ".tab") {
				body = []byte("x\t1\n")
			}
			if n == name {
				body = data
			}
			if err := os.WriteFile(filepath.Join(dir, n), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p, err := Load(dir)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name %s", err, name)
			}
			return
		}
		New(p).Tokenize("Mr. X went home. Then x.")
	})
}
