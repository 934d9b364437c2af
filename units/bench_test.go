package units

import (
	"os"
	"testing"
)

// BenchmarkParse measures decoding and validating a typical sim unit with
// schedules (the daemon re-reads every file on each folder change).
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/good/sim-llama.toml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("sim-llama", "testdata/good/sim-llama.toml", data); err != nil {
			b.Fatal(err)
		}
	}
}
