package catalog

import "testing"

// BenchmarkLookup measures one (model, device) lookup, which copies the
// spec out of the shared index.
func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Lookup("meta-llama/Llama-3.1-8B-Instruct", "n300"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildIndex measures decoding and expanding the embedded data,
// paid once per process.
func BenchmarkBuildIndex(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		raw, err := readData()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := buildIndex(raw); err != nil {
			b.Fatal(err)
		}
	}
}
