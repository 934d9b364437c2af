package units

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func loadText(t *testing.T, text string) (*Unit, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func TestMediaTable(t *testing.T) {
	const head = "model = \"stable-diffusion-xl-base-1.0\"\ndevice = \"t3k\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:9000\"\n"
	u, err := loadText(t, head+"[media]\ndevice_ids = \"(0,1),(2,3),(4,5)\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := u.MediaWorkers(); !reflect.DeepEqual(g, [][]int{{0, 1}, {2, 3}, {4, 5}}) {
		t.Fatalf("groups %v", g)
	}
	// Default: the catalog's 4 workers of 2x1 on a T3K.
	u, err = loadText(t, head)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := u.MediaWorkers(); FormatDeviceIDs(g) != "(0,1),(2,3),(4,5),(6,7)" {
		t.Fatalf("default groups %v", g)
	}
	for _, tc := range []struct{ media, want string }{
		{`device_ids = "(0),(1)"`, `m.toml:6:1: media.device_ids: each worker of tt-sdxl-trace on t3k runs a 2x1 mesh (2 chips), but the groups have 1; e.g. device_ids = "(0,1),(2,3),(4,5),(6,7)"`},
		{`device_ids = "(0,1),(1,2)"`, "chip 1 is in worker groups 1 and 2"},
		{`device_ids = "(8,9)"`, "chip 8 is outside the unit's 8 chips"},
		{`device_ids = "0,1"`, "must be in parentheses"},
		{`device_ids = "(0,x)"`, `"x" is not a chip id`},
		{`device_ids = "(0,1),(2)"`, "worker groups differ in size"},
		{`max_audio_duration_seconds = -1`, "media.max_audio_duration_seconds: must be between 0"},
		{`max_audio_size_bytes = 99999999999`, "media.max_audio_size_bytes: must be between 0"},
	} {
		_, err := loadText(t, head+"[media]\n"+tc.media+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.media, err, tc.want)
		}
	}
	_, err = loadText(t, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:9000\"\n[media]\ndevice_ids = \"(0)\"\n")
	if err == nil || !strings.Contains(err.Error(), "[media] settings are for media models") {
		t.Fatalf("media table on an LLM: %v", err)
	}
	// A speech-to-text unit's body limit fits a base64 clip of its size limit.
	u, err = loadText(t, "model = \"whisper-large-v3\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:9000\"\n[media]\nmax_audio_size_bytes = 3000000\n")
	if err != nil {
		t.Fatal(err)
	}
	if u.Limits.MaxBodyBytes != 4000000+1<<20 {
		t.Fatalf("body limit %d", u.Limits.MaxBodyBytes)
	}
}

func FuzzParseDeviceIDs(f *testing.F) {
	for _, s := range []string{"(0)", "(0,1),(2,3)", "((", "(0,),(1)", "(-1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseDeviceIDs(s)
		if err != nil {
			return
		}
		back, err := ParseDeviceIDs(FormatDeviceIDs(g))
		if err != nil || !reflect.DeepEqual(back, g) {
			t.Fatalf("%q: %v round-trips to %v (%v)", s, g, back, err)
		}
	})
}
