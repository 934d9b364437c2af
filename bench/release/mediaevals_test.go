package release

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// fixtureMediaReport is an eval run of a simulated SDXL unit and a
// simulated video unit: the figures, ranges and conditions that the
// reports show beside the eval table.
func fixtureMediaReport() *Report {
	r := &Report{
		Metadata: Metadata{ReportID: "stable-diffusion-xl-base-1.0_2026-01-02_03-04-05", RunID: "20260102T030405Z-evals-abcdef",
			Unit: "sdxl-sim", Model: "stable-diffusion-xl-base-1.0", ServedModel: "stable-diffusion-xl-base-1.0", Device: "n150", Runtime: "sim",
			Simulated: true, ModelStatus: catalog.StatusName(catalog.StatusFunctional), Workflow: WorkflowEvals, Limit: "smoke",
			GeneratedAt: "2026-01-02T03:10:00Z", BaseURL: "http://127.0.0.1:8000", EvalTasks: "load_image", TTISVersion: "test"},
		Evals: &EvalSection{Rows: []EvalRow{
			{Task: "load_image", Role: RoleReference, Tolerance: 0.05, Published: f(14), Score: f(18.25), Check: verdict.Fail,
				Basis: "FID and CLIP score within stable-diffusion-xl-base-1.0's ranges for 100 prompts", Samples: 100,
				Media: &results.MediaFigures{Variant: "text-to-image", Asked: 100, Measured: 100, FID: f(412.5), CLIP: f(18.25), CLIPStdev: f(1.75),
					FIDRange: &[2]float64{181.3623, 188.162}, CLIPRange: &[2]float64{31.68, 32.094664207879916},
					Conditions: map[string]any{"clip_weights": "openai/clip-vit-base-patch32@3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268",
						"fid_inception":  "pt_inception-2015-12-05-6726825d.pth (sha256 6726825d0af5f729cebd5821db510b11b1cfad8faad88a03f1befd49fb9129b2)",
						"fid_statistics": "val2014.npz (git blob 806479d0693a33110526b6689aa26baddd995c7b)",
						"request":        map[string]any{"route": "/v1/images/generations", "num_inference_steps": 20, "seed": 0}}}},
			{Task: "load_video", Role: RoleExtra, Tolerance: 0.05, Published: f(72), Score: f(22.5), Check: verdict.Fail,
				Basis: "mean CLIP score of the videos within mochi-1-preview's range for 5 prompts", Samples: 5,
				Media: &results.MediaFigures{Variant: "text-to-video", Asked: 5, Measured: 5, CLIP: f(22.5), CLIPStdev: f(0.5), CLIPMin: f(21.75), CLIPMax: f(23.25),
					CLIPRange: &[2]float64{26.20977, 31.5}, NotMeasured: "FVD and FVMD: not reproduced",
					Conditions: map[string]any{"clip_weights": "openai/clip-vit-base-patch32@3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268", "frame_sample_rate": 8}}},
		}},
	}
	r.Acceptance = Accept(&catalog.Spec{Status: catalog.StatusFunctional}, nil, r.Evals)
	return r
}

func TestMediaReportGolden(t *testing.T) {
	r := fixtureMediaReport()
	golden(t, "report_media.md", Markdown(r))
	js, err := JSON(r)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report_media.json", js)
	back, err := ParseJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if m := back.Evals.Rows[0].Media; m == nil || *m.FID != 412.5 || m.Conditions["clip_weights"] == nil {
		t.Errorf("report.json read back without the figures: %+v", m)
	}
	html, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Image and Video Figures", "SIMULATED", "412.50", "181.3623 – 188.162", "openai/clip-vit-base-patch32@3d74acf9", "not measured", "21.75–23.25"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
