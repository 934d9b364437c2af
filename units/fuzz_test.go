package units

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// FuzzParse feeds arbitrary text to the unit parser: it must never panic,
// every problem it reports must name the file, and a position when it
// comes from the decoder, and a valid unit's AbsoluteText must load too.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("chips = [[1], {a = 1}]\n[[schedule]]\ncalendar = \"CRON_TZ=X * * * * *\"\n"))
	f.Add([]byte("[restart]\ndelay = 1.5\n[limits]\nrequest_timeout = true\n"))
	// Found by fuzzing: a mis-cased table hid the syntax error below it
	// behind a duration error without position.
	f.Add([]byte("[restArt]\ndelAY =10\n0"))
	f.Add([]byte("MODEL = \"x\"\nmodel = \"y\"\n[Restart]\ndelay = \"1s\"\n[vllm.env]\nHF_HOME = \"/x\"\n"))
	path := filepath.Join(f.TempDir(), "fuzz.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := Parse("fuzz", path, data)
		if err == nil {
			if u == nil || u.Name != "fuzz" {
				t.Fatalf("nil error but unit %+v", u)
			}
			// ttisd snapshots what it accepts: the snapshot's text must
			// load too.
			out, err := u.AbsoluteText(data)
			if err != nil {
				t.Fatalf("AbsoluteText of a valid unit: %v", err)
			}
			if _, err := Parse("fuzz", path, out); err != nil {
				t.Fatalf("AbsoluteText of a valid unit does not load: %v\n%s", err, out)
			}
			return
		}
		list := Errors(err)
		if len(list) == 0 {
			t.Fatalf("error %v has no entries", err)
		}
		positioned := false
		pos := scanPositions(data)
		for _, e := range list {
			if e.File != path || e.Msg == "" {
				t.Fatalf("entry without file or message: %#v", e)
			}
			positioned = positioned || e.Line > 0
			// A problem with something written in the file says where:
			// only missing keys (and whole-file problems) have no place.
			if e.Line == 0 && e.Field != "" && pos.has(fieldPath(e.Field)) {
				t.Fatalf("error about %s, which the file sets, without position: %v", e.Field, e)
			}
		}
		// Text that is not TOML at all fails in the decoder, whose errors
		// always carry a position.
		var doc map[string]any
		if toml.Unmarshal(data, &doc) != nil && !positioned {
			t.Fatalf("syntax error without position: %v", err)
		}
	})
}

// fieldPath turns an error's "schedule[0].calendar" back into the dotted
// key path "schedule.0.calendar".
func fieldPath(field string) string {
	return strings.NewReplacer("[", ".", "]", "").Replace(field)
}
