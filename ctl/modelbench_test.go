package ctl

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

func TestRunModelBench(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"f16", "f32"} {
		rows, err := runModelBench(path, benchConfig{threads: 1, prompt: 16, gen: 4, reps: 2, batches: []int{1, 3}, kvType: kv})
		if err != nil {
			t.Fatal(err)
		}
		var tests []string
		for _, r := range rows {
			tests = append(tests, r.Test)
			if r.TokensPerSec <= 0 || r.Type != "F32" || r.Threads != 1 || r.SizeBytes <= 0 || r.KVType != kv {
				t.Errorf("row %+v", r)
			}
		}
		if got := strings.Join(tests, " "); got != "pp16 tg4 tg4@3" {
			t.Errorf("tests %q, want pp16 tg4 tg4@3", got)
		}
	}
	if _, err := runModelBench(filepath.Join(t.TempDir(), "none.gguf"), benchConfig{threads: 1, prompt: 1, reps: 1, batches: []int{1}}); err == nil {
		t.Error("a missing model file gave no error")
	}
}

func TestParseBatches(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"1,8", []int{1, 8}, true},
		{" 4 ", []int{4}, true},
		{"0", nil, false},
		{"1,x", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, err := parseBatches(tt.in)
		if (err == nil) != tt.ok || len(got) != len(tt.want) {
			t.Errorf("parseBatches(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestWriteBenchTable(t *testing.T) {
	var b bytes.Buffer
	rows := []benchRow{
		{Model: "m", SizeBytes: 3 << 20, Type: "Q8_0", Threads: 2, KVType: "f16", Test: "pp128", TokensPerSec: 1234.5, Stddev: 6.25},
		{Model: "m", SizeBytes: 3 << 20, Type: "Q8_0", Threads: 2, KVType: "f32", Test: "tg128@8", TokensPerSec: 99, Stddev: 0},
	}
	if err := writeBenchTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "model     size  type  threads   kv     test             t/s\n" +
		"    m  3.0 MiB  Q8_0        2  f16    pp128  1234.50 ± 6.25\n" +
		"    m  3.0 MiB  Q8_0        2  f32  tg128@8    99.00 ± 0.00\n"
	if b.String() != want {
		t.Errorf("table\n%s\nwant\n%s", b.String(), want)
	}
}

// TestModelBenchKVTypeFlag checks --kv-type: an unknown type is a usage
// error that names the choices, and f32 reaches the rows.
func TestModelBenchKVTypeFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if out, code := runCtl(t, "model", "bench", "--kv-type", "q8", path); code != 2 || !strings.Contains(out, "--kv-type \"q8\": want f16 or f32") {
		t.Errorf("--kv-type q8: exit %d:\n%s", code, out)
	}
	out, code := runCtl(t, "model", "bench", "--kv-type", "f32", "-p", "8", "-n", "2", "--batch", "1", "-r", "1", path)
	if code != 0 || !strings.Contains(out, " f32 ") || !strings.Contains(out, "pp8") {
		t.Errorf("--kv-type f32: exit %d:\n%s", code, out)
	}
}
