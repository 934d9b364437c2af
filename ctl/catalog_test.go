package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
)

func TestCatalogCommand(t *testing.T) {
	out, code := runCtl(t, "catalog")
	if code != 0 {
		t.Fatalf("code %d: %s", code, out)
	}
	for _, want := range []string{"MODEL", "Llama-3.1-8B-Instruct", "n300:32/128k", "Qwen3-8B", "n150:32/40k", "FUNCTIONAL"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	out, code = runCtl(t, "catalog", "--device", "n300", "meta-llama/Llama-3.1-8B-Instruct")
	if code != 0 {
		t.Fatalf("code %d: %s", code, out)
	}
	for _, want := range []string{"meta-llama/Llama-3.1-8B-Instruct on n300", "id_tt-transformers_Llama-3.1-8B-Instruct_n300", "must pass: functional, complete", "functional   128/128   1      580"} {
		if !strings.Contains(out, want) {
			t.Errorf("detail lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "on n150") {
		t.Errorf("--device n300 shows other devices:\n%s", out)
	}
	out, code = runCtl(t, "-o", "json", "catalog", "Llama-3.2-1B-Instruct")
	if code != 0 {
		t.Fatalf("code %d: %s", code, out)
	}
	var specs []catalog.Spec
	if err := json.Unmarshal([]byte(out), &specs); err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 || specs[0].ModelName != "Llama-3.2-1B-Instruct" {
		t.Errorf("specs %+v", specs)
	}
	// Per spec, whether a release can complete, and why not.
	out, code = runCtl(t, "-o", "json", "catalog", "stable-diffusion-xl-base-1.0")
	var entries []catalogEntry
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil || len(entries) == 0 || !entries[0].Release.Complete || entries[0].Release.References != 1 {
		t.Errorf("SDXL release completeness: %d %s", code, out)
	}
	out, _ = runCtl(t, "catalog")
	if !strings.Contains(out, "RELEASE") || !strings.Contains(out, "incomplete: ruler") {
		t.Errorf("table lacks the release column:\n%s", out)
	}
	out, code = runCtl(t, "catalog", "Lama-3.2-1B-Instruct")
	if code != 4 || !strings.Contains(out, "did you mean Llama-3.2-1B-Instruct") {
		t.Errorf("unknown model: code %d, %s", code, out)
	}
	if _, code := runCtl(t, "catalog", "--device", "nope", "Qwen3-8B"); code != 2 {
		t.Errorf("bad device: code %d", code)
	}
}

// TestCatalogDetailGolden pins the human detail view of one model; set
// TTIS_UPDATE_GOLDEN=1 to rewrite testdata/catalog/*.golden.
func TestCatalogDetailGolden(t *testing.T) {
	for _, tt := range []struct{ golden, model, device string }{
		{"llama-3.1-8b-instruct.golden", "Llama-3.1-8B-Instruct", ""},
		{"gpt-oss-20b-galaxy.golden", "gpt-oss-20b", "galaxy"},
	} {
		args := []string{"catalog"}
		if tt.device != "" {
			args = append(args, "--device", tt.device)
		}
		out, code := runCtl(t, append(args, tt.model)...)
		if code != 0 {
			t.Fatalf("code %d: %s", code, out)
		}
		path := filepath.Join("testdata", "catalog", tt.golden)
		if os.Getenv("TTIS_UPDATE_GOLDEN") != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s differs from the output:\n%s", path, out)
		}
	}
}
