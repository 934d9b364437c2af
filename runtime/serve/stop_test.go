package serve

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStopMatcher(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		want   []string // released text per piece
		hitAt  int      // piece index of the hit, -1 for none
		hit    int
		rest   string // flush after the last piece (no hit)
	}{
		{"no stops", nil, []string{"a", "b"}, []string{"a", "b"}, -1, -1, ""},
		{"hold prefix then release", []string{"xyz"}, []string{"ab", "x", "y", "q"}, []string{"ab", "", "", "xyq"}, -1, -1, ""},
		{"hit across tokens", []string{"xyz"}, []string{"ab", "xy", "z tail"}, []string{"ab", "", ""}, 2, 0, ""},
		{"hit inside one token", []string{"\n\n"}, []string{"one", " two\n\nthree"}, []string{"one", " two"}, 1, 0, ""},
		{"earliest stop wins", []string{"cd", "bc"}, []string{"abcd"}, []string{"a"}, 0, 1, ""},
		{"held text flushed at end", []string{"END"}, []string{"the E", "N"}, []string{"the ", ""}, -1, -1, "EN"},
		{"split rune held", nil, []string{"caf\xc3", "\xa9!"}, []string{"caf", "é!"}, -1, -1, ""},
		{"stop right at start", []string{"Q:"}, []string{"Q", ":"}, []string{"", ""}, 1, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newStopMatcher(c.stops)
			for i, p := range c.pieces {
				got, hit := m.add([]byte(p))
				if string(got) != c.want[i] {
					t.Errorf("piece %d %q released %q, want %q", i, p, got, c.want[i])
				}
				if hit >= 0 {
					if i != c.hitAt || hit != c.hit {
						t.Errorf("hit %d at piece %d, want %d at %d", hit, i, c.hit, c.hitAt)
					}
					return
				}
			}
			if c.hitAt >= 0 {
				t.Fatalf("no hit, want one at piece %d", c.hitAt)
			}
			if got := string(m.flush()); got != c.rest {
				t.Errorf("flush %q, want %q", got, c.rest)
			}
		})
	}
}

func FuzzStopMatcher(f *testing.F) {
	f.Add("hello world stop here", "stop", 3)
	f.Add("日本語\n\nx", "\n\n", 2)
	f.Fuzz(func(t *testing.T, text, stop string, chunk int) {
		if stop == "" || chunk <= 0 || chunk > 64 {
			return
		}
		m := newStopMatcher([]string{stop})
		var out []byte
		hit := false
		for i := 0; i < len(text) && !hit; i += chunk {
			r, h := m.add([]byte(text[i:min(i+chunk, len(text))]))
			out = append(out, r...)
			hit = h >= 0
		}
		if !hit {
			out = append(out, m.flush()...)
		}
		want := text
		if k := strings.Index(text, stop); k >= 0 {
			want = text[:k]
		}
		if string(out) != want {
			t.Fatalf("released %q, want %q (hit %v)", out, want, hit)
		}
	})
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ nl\n tab\t cr\r", "\x00\x1f ctl", "日本語 🙂", "bad \xff\xc3 utf8", "\u2028\u2029"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q encoded as invalid JSON %s: %v", s, got, err)
			continue
		}
		// encoding/json replaces each invalid byte with U+FFFD; so must we.
		std, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(std, &want)
		if back != want {
			t.Errorf("%q round-tripped as %q", s, back)
		}
		if string(got) != string(std) && utf8.ValidString(s) {
			t.Errorf("%q: got %s, encoding/json gives %s", s, got, std)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("a\"b\\c\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(appendJSONString(nil, []byte(s)), &back); err != nil {
			t.Fatalf("invalid JSON for %q: %v", s, err)
		}
	})
}
