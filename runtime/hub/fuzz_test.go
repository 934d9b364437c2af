package hub

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseTreeRejectsUnsafeEntries(t *testing.T) {
	good := `[{"type":"directory","oid":"` + strings.Repeat("a", 40) + `","size":0,"path":"main"},
{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":10,"path":"main/x.parquet","lfs":{"oid":"` + strings.Repeat("c", 64) + `","size":10,"pointerSize":130}}]`
	files, err := ParseTree([]byte(good))
	if err != nil || len(files) != 1 || files[0].LFS == nil || files[0].blobKey() != strings.Repeat("c", 64) {
		t.Fatalf("%+v %v", files, err)
	}
	for _, bad := range []string{
		`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":1,"path":"../../etc/passwd"}]`,
		`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":1,"path":"/abs"}]`,
		`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":1,"path":"a//b"}]`,
		`[{"type":"file","oid":"../x","size":1,"path":"a"}]`,
		`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":1,"path":"a","lfs":{"oid":"../../x","size":1}}]`,
		`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":-1,"path":"a"}]`,
		`[{"type":"symlink","path":"a"}]`,
		`{"error":"x"}`,
	} {
		if _, err := ParseTree([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestNextLink(t *testing.T) {
	for h, want := range map[string]string{
		`<https://huggingface.co/api/datasets/a/b/tree/main?recursive=true&cursor=xyz>; rel="next"`: "https://huggingface.co/api/datasets/a/b/tree/main?recursive=true&cursor=xyz",
		`<https://x/prev>; rel="prev", <https://x/next>; rel=next`:                                  "https://x/next",
		`<https://x/prev>; rel="prev"`:                                                              "",
		``:                                                                                          "",
	} {
		if got := NextLink(h); got != want {
			t.Errorf("NextLink(%q) = %q, want %q", h, got, want)
		}
	}
}

func FuzzParseTree(f *testing.F) {
	f.Add([]byte(`[{"type":"file","oid":"` + strings.Repeat("b", 40) + `","size":1,"path":"a/b.csv"}]`))
	f.Add([]byte(`[{"type":"directory","path":"a"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		files, err := ParseTree(body)
		if err != nil {
			return
		}
		for _, fl := range files {
			if err := validPath(fl.Path); err != nil || strings.Contains(fl.blobKey(), "/") || fl.blobKey() == "" {
				t.Fatalf("unsafe entry accepted: %+v", fl)
			}
		}
	})
}

func FuzzParseRevision(f *testing.F) {
	f.Add([]byte(`{"id":"a/b","sha":"` + strings.Repeat("0", 40) + `","siblings":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		commit, err := ParseRevision(body)
		if err == nil && !IsCommit(commit) {
			t.Fatalf("commit %q accepted", commit)
		}
	})
}

func FuzzNextLink(f *testing.F) {
	f.Add(`<https://x/a?cursor=1>; rel="next"`)
	f.Fuzz(func(t *testing.T, h string) {
		if got := NextLink(h); got != "" && !strings.Contains(h, "<"+got+">") {
			t.Fatalf("NextLink(%q) = %q, not a bracketed URL of the header", h, got)
		}
	})
}

// A Content-Range never gives a negative start (Retry-After is fuzzed
// where it is parsed, in runtime/retryafter).
func FuzzContentRange(f *testing.F) {
	f.Add("bytes 100-199/200")
	f.Fuzz(func(t *testing.T, cr string) {
		if n, ok := contentRangeStart(cr); ok && n < 0 {
			t.Fatalf("negative start %d", n)
		}
	})
}

func FuzzBodyMessageAndCacheName(f *testing.F) {
	f.Add([]byte(`{"error":"Repository not found"}`), "datasets--openai--gsm8k")
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		m := bodyMessage(body)
		if !utf8.ValidString(m) || len(m) > 310 || strings.Contains(m, "\n") {
			t.Fatalf("message %q", m)
		}
		if r, ok := parseCacheName(name); ok && (r.Validate() != nil || r.cacheName() != name) {
			t.Fatalf("cache name %q read as %+v", name, r)
		}
	})
}
