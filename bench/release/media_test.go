package release_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
)

// TestReleaseMediaUnits benchmarks sim media units through `ttisctl
// release --workflow benchmarks`: each task's point is measured, graded
// against the catalog's media target and reported with its own columns.
func TestReleaseMediaUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisd and ttisctl")
	}
	_, ttisctl := build(t)
	for _, tc := range []struct {
		model, verdict string
		columns        []string
	}{
		// COMPLETE models: the target point is graded and enforced.
		{"stable-diffusion-xl-base-1.0", "PASS", []string{"Seconds per Image", "Images/s", "images_per_s_user"}},
		{"whisper-large-v3", "PASS", []string{"Real-Time Factor", "rtr"}},
		{"speecht5_tts", "PASS", []string{"Real-Time Factor", "rtr"}},
		// Enforces nothing: measured, not certified.
		{"bge-large-en-v1.5", "UNGRADED", []string{"Embeddings/s", "prompt_tokens_per_s_user"}},
		{"resnet-50", "PASS", []string{"Images/s"}},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "PASS", []string{"Seconds per Image"}},
		{"mochi-1-preview", "PASS", []string{"Seconds per Image", "videos_per_s_user"}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			device, scale := "n150", "0.01"
			if tc.model == "mochi-1-preview" {
				device, scale = "t3k", "0.0005" // 526 s a video at this target
			}
			url := testbin.Serve(t, "model = \""+tc.model+"\"\ndevice = \""+device+"\"\nruntime = \"sim\"\n[sim]\ntime_scale = "+scale+"\n").URL
			state := t.TempDir()
			out, _ := ctl(t, ttisctl, "release", "--url", url, "--device", device, "--workflow", "benchmarks", "--limit", "smoke", "--state-dir", state)
			if !strings.Contains(out, "Verdict: "+tc.verdict) {
				t.Fatalf("want verdict %s:\n%s", tc.verdict, out)
			}
			store := &runs.Store{Root: filepath.Join(state, "runs")}
			list, errs := store.List(context.Background(), "")
			if len(errs) > 0 || len(list) != 1 {
				t.Fatalf("runs %v %v", list, errs)
			}
			dir := store.Dir(list[0])
			md, err := os.ReadFile(filepath.Join(dir, release.ReportMarkdown))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range append(tc.columns, "SIMULATED", "Media point") {
				if !strings.Contains(string(md), want) {
					t.Errorf("report.md lacks %q:\n%s", want, md)
				}
			}
			raw, err := os.ReadFile(filepath.Join(dir, "benchmarks", "media.json"))
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Completed int     `json:"completed"`
				Failed    int     `json:"failed"`
				UserRate  float64 `json:"user_rate"`
			}
			if err := json.Unmarshal(raw, &p); err != nil || p.Completed < 2 || p.Failed != 0 || p.UserRate <= 0 {
				t.Fatalf("media.json %s (%v)", raw, err)
			}
			js, _ := os.ReadFile(filepath.Join(dir, release.ReportJSON))
			if _, err := release.ParseJSON(js); err != nil {
				t.Fatalf("report.json does not parse back: %v", err)
			}
		})
	}
}
