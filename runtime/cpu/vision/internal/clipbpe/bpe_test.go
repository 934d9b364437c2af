package clipbpe

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testTokenizer builds CLIP's tokenizer from testdata/merges.txt.gz (the
// 48894 merges of open_clip's bpe_simple_vocab_16e6.txt.gz in merges.txt
// form) and a vocab.json derived from it the way SimpleTokenizer derives its
// encoder: the 256 byte characters, the same with "</w>", every merge's
// result, then the two special tokens. The golden ids come from open_clip
// itself, so a wrong derivation here fails the test.
func testTokenizer(t testing.TB) (*Tokenizer, string) {
	t.Helper()
	zr, err := os.Open("testdata/merges.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	gz, err := gzip.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	merges, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	vocab := VocabFromMerges(merges)
	dir := t.TempDir()
	vj, _ := json.Marshal(vocab)
	vp, mp := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")
	if err := os.WriteFile(vp, vj, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, merges, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(vp, mp)
	if err != nil {
		t.Fatal(err)
	}
	return tok, dir
}

func TestTokenizeMatchesOpenCLIP(t *testing.T) {
	tok, _ := testTokenizer(t)
	if tok.StartID() != 49406 || tok.EndID() != 49407 {
		t.Fatalf("start %d end %d, want 49406 49407", tok.StartID(), tok.EndID())
	}
	raw, err := os.ReadFile("testdata/tokenize_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Text  string
			Clean string
			IDs   []int
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 200 {
		t.Fatalf("golden file has %d cases", len(g.Cases))
	}
	for _, c := range g.Cases {
		if got := Clean(c.Text); got != c.Clean {
			t.Errorf("Clean(%q) = %q, want %q", c.Text, got, c.Clean)
		}
		want := make([]int, ContextLength)
		copy(want, c.IDs)
		got := tok.Tokenize(c.Text)
		if !equal(got, want) {
			t.Errorf("Tokenize(%q)\n got %v\nwant %v", c.Text, trim(got), c.IDs)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func trim(ids []int) []int {
	for len(ids) > 0 && ids[len(ids)-1] == 0 {
		ids = ids[:len(ids)-1]
	}
	return ids
}

func TestBadFiles(t *testing.T) {
	good := VocabFromMerges([]byte("#version: 0.2\nh e\nhe llo</w>\n"))
	vj, _ := json.Marshal(good)
	for _, c := range []struct {
		name          string
		vocab, merges string
		want          string
	}{
		{"vocab not json", "[1,2]", "", "vocab.json: not a JSON object of token ids"},
		{"id range", `{"a": 5}`, "", `vocab.json: token "a" has id 5, outside [0, 1)`},
		{"no bytes", `{"a": 0}`, "", "not a byte-level BPE vocabulary"},
		{"merge fields", string(vj), "#version: 0.2\nh e l\n", `merges.txt:2: merge "h e l" is not two symbols`},
		{"merge unknown", string(vj), "x y\n", `merges.txt:1: merge "x y" makes "xy", which is not in vocab.json`},
	} {
		_, err := Parse("vocab.json", []byte(c.vocab), "merges.txt", []byte(c.merges))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	dup := bytes.Replace(vj, []byte(`"h":`), []byte(`"h":0,"hh":`), 1)
	if _, err := Parse("vocab.json", dup, "merges.txt", nil); err == nil || !strings.Contains(err.Error(), "share id") {
		t.Errorf("duplicate ids: %v", err)
	}
	small, err := Parse("vocab.json", vj, "merges.txt", []byte("#version: 0.2\nh e\nhe llo</w>\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := small.Encode("Hello"); len(got) != 4 { // he, l, l, o</w>: "llo</w>" is never formed
		t.Errorf("Encode with a tiny vocabulary: %v", got)
	}
}

func FuzzTokenize(f *testing.F) {
	tok, _ := testTokenizer(f)
	for _, s := range []string{"a photo of a cat", "&amp;&#x1F600;\x1b[1m", "\u03a3\u03a3 \u0130", "<end_of_text>", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Tokenize(s)
		if len(ids) != ContextLength || ids[0] != tok.StartID() {
			t.Fatalf("Tokenize(%q) = %v", s, ids)
		}
		end := false
		for _, id := range ids[1:] {
			if id == tok.EndID() {
				end = true
			}
			if id < 0 || id >= len(tok.encoder) {
				t.Fatalf("Tokenize(%q): id %d out of range", s, id)
			}
		}
		if !end {
			t.Fatalf("Tokenize(%q) has no end token: %v", s, ids)
		}
	})
}
