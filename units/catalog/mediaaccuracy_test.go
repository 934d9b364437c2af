package catalog

import "testing"

// TestMediaAccuracy spot-checks the transcription against
// model_accuracy_reference.json (tt-inference-server 11ac526e0) and the
// key rule for models evaluated at 512×512.
func TestMediaAccuracy(t *testing.T) {
	if n := len(MediaAccuracies()); n != 13 {
		t.Errorf("%d entries, the reference has 13", n)
	}
	sdxl, ok := MediaAccuracyFor("stable-diffusion-xl-base-1.0")
	if !ok {
		t.Fatal("no SDXL entry")
	}
	r, ok := sdxl.Range(100)
	if !ok || r.FID == nil || r.FID[0] != 181.3623 || r.FID[1] != 188.162 || r.CLIP[0] != 31.68 || r.CLIP[1] != 32.094664207879916 {
		t.Errorf("SDXL 100 prompts: %+v", r)
	}
	if r, ok := sdxl.Range(5000); !ok || r.FID[0] != 23.01085758 || r.CLIP[1] != 31.81331801 {
		t.Errorf("SDXL 5000 prompts: %+v", r)
	}
	if _, ok := sdxl.Range(500); ok {
		t.Error("SDXL has no 500-prompt range")
	}
	if k := MediaAccuracyKey("Z-Image-Turbo"); k != "Z-Image-Turbo-512x512" {
		t.Errorf("Z-Image-Turbo's key is %q", k)
	}
	z, ok := MediaAccuracyFor("Z-Image-Turbo")
	if r, _ := z.Range(100); !ok || r.FID[0] != 175 || r.CLIP[1] != 33.2 {
		t.Errorf("Z-Image-Turbo: %+v", z)
	}
	mochi, ok := MediaAccuracyFor("mochi-1-preview")
	if r, _ := mochi.Range(5); !ok || mochi.Steps != 50 || r.FID != nil || r.CLIP != [2]float64{26.20977, 31.5} {
		t.Errorf("mochi: %+v", mochi)
	}
	if _, ok := MediaAccuracyFor("resnet-50"); ok {
		t.Error("resnet-50 has no media accuracy entry")
	}
}

// TestReleaseCompleteness: a spec is complete when every reference of its
// model is measurable, or waived by a known issue of the spec.
func TestReleaseCompleteness(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n300")
	if err != nil {
		t.Fatal(err)
	}
	all := ReleaseCompleteness(s, func(string, string) string { return "" })
	if !all.Complete || all.References == 0 || len(all.Unmeasurable) != 0 {
		t.Errorf("everything measurable: %+v", all)
	}
	none := ReleaseCompleteness(s, func(task, model string) string {
		if model != "Llama-3.1-8B-Instruct" {
			t.Errorf("asked about %s", model)
		}
		return "no " + task
	})
	if none.Complete || len(none.Unmeasurable) != none.References || none.Unmeasurable[0].Why != "no "+none.Unmeasurable[0].Task {
		t.Errorf("nothing measurable: %+v", none)
	}
	s.KnownIssues = append(s.KnownIssues, KnownIssue{Workflow: "evals"})
	waived := ReleaseCompleteness(s, func(task, model string) string { return "no " + task })
	if !waived.Complete || !waived.Unmeasurable[0].Waived {
		t.Errorf("waived by a known issue: %+v", waived)
	}
}
