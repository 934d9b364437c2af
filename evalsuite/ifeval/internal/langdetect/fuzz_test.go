package langdetect

import (
	"errors"
	"testing"
)

// FuzzDetect runs any text through detection: it must end (the trial
// loop is bounded), answer a loaded language, "unknown" or ErrNoFeatures,
// and answer the same twice for one seed.
func FuzzDetect(f *testing.F) {
	p := debianProfiles(f)
	for _, s := range []string{"", "hello world", "x@yz http://a.b", "Con ca\u0301o", "\u4e00\u4e8c\u3042", "AAA BBB"} {
		f.Add(s, int64(0))
	}
	langs := map[string]bool{"unknown": true}
	for _, l := range p.Languages() {
		langs[l] = true
	}
	f.Fuzz(func(t *testing.T, text string, seed int64) {
		got, err := p.Detect(text, seed)
		if err != nil {
			if !errors.Is(err, ErrNoFeatures) {
				t.Fatal(err)
			}
			return
		}
		if !langs[got] {
			t.Fatalf("%q: %q is no loaded language", text, got)
		}
		if again, _ := p.Detect(text, seed); again != got {
			t.Fatalf("%q seed %d: %q then %q", text, seed, got, again)
		}
	})
}
