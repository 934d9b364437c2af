package release_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/cpu/vision"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/visiontest"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/units/limit"
	"github.com/ttis-dev/ttis/units/verdict"
)

// visionHub is a fake Hub serving a small CLIP checkpoint of the real
// architecture (visiontest.TinyCLIP: CLIP's BPE, 224-pixel images in
// 32-pixel patches, tiny widths) in transformers' layout, as
// openai/clip-vit-base-patch32; it returns the client and the commit.
func visionHub(t *testing.T) (*hubtest.Server, *hub.Client, string) {
	t.Helper()
	files, err := visiontest.CLIPCheckpoint(visiontest.TinyCLIP)
	if err != nil {
		t.Fatal(err)
	}
	var hf []hubtest.File
	for _, name := range vision.CLIPFiles {
		hf = append(hf, hubtest.File{Path: name, Content: files[name], LFS: strings.HasSuffix(name, ".safetensors")})
	}
	fake := hubtest.New(t)
	commit := fake.SetBranch("model", vision.CLIPRepoID, "main", hf)
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, Token: "hf_test", CacheDir: filepath.Join(t.TempDir(), "hub"), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return fake, hc, commit
}

// asset writes a file into dir and names it, with its digest, as the
// replacement of a published asset.
func asset(t *testing.T, dir, name string, b []byte) tasks.Asset {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return tasks.Asset{File: name, SHA256: hex.EncodeToString(sum[:]), URL: "test", What: "a test's " + name}
}

// captionsTSV is a captions file in MLCommons' layout.
func captionsTSV(n int) []byte {
	subjects := []string{"A red bus", "Two dogs", "A kitchen", "A man on a surfboard", "A plate of food", "A giraffe", "A clock tower", "Children"}
	places := []string{"on a city street.", "in a grassy field.", "with white cabinets.", "riding a wave.", "on a wooden table.", "near some trees.", "under a blue sky.", "playing soccer."}
	var b strings.Builder
	b.WriteString("id\timage_id\tcaption\theight\twidth\tfile_name\tcoco_url\n")
	for i := range n {
		fmt.Fprintf(&b, "%d\t%d\t%s %s\t480\t640\tCOCO_%d.jpg\thttp://images.invalid/%d.jpg\n", 10+i, 500+i, subjects[i%len(subjects)], places[(i/len(subjects)+i)%len(places)], i, i)
	}
	return []byte(b.String())
}

// npy writes a float64 .npy file.
func npy(shape string, v []float64) []byte {
	h := "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }"
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	b = append(b, h...)
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// statsNPZ is FID reference statistics for features of length d: a mean
// and a diagonal covariance, as numpy.savez lays them out.
func statsNPZ(t *testing.T, d int) []byte {
	t.Helper()
	mu := make([]float64, d)
	sigma := make([]float64, d*d)
	for i := range d {
		mu[i] = 0.2 + 0.1*math.Sin(float64(i))
		sigma[i*d+i] = 0.05
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range map[string][]byte{"mu.npy": npy(fmt.Sprintf("(%d,)", d), mu), "sigma.npy": npy(fmt.Sprintf("(%d, %d)", d, d), sigma)} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func evalRow(t *testing.T, out *release.Outcome, task string) release.EvalRow {
	t.Helper()
	if out.Report.Evals == nil {
		t.Fatal("no eval section")
	}
	for _, r := range out.Report.Evals.Rows {
		if r.Task == task {
			return r
		}
	}
	t.Fatalf("no %s row in %+v", task, out.Report.Evals.Rows)
	return release.EvalRow{}
}

// narrowInception is the FID Inception with every channel count divided
// by k (the RGB input kept): the real architecture (blocks, kernels,
// pools, concatenations) at 1/k² of the work, so that a test can measure
// a hundred images, even under the race detector. Its features have
// 2048/k values.
func narrowInception(k int) []visiontest.Tensor {
	var out []visiontest.Tensor
	for _, x := range visiontest.InceptionTensors() {
		if strings.HasPrefix(x.Name, "fc.") {
			continue // the classifier is not part of the features
		}
		x.Shape = append([]int(nil), x.Shape...)
		x.Shape[0] /= k
		if len(x.Shape) == 4 {
			if x.Shape[1] != 3 {
				x.Shape[1] /= k
			}
			x.Scale = math.Sqrt(6 / float64(x.Shape[1]*x.Shape[2]*x.Shape[3]))
		}
		out = append(out, x)
	}
	return out
}

// TestReleaseSimSDXLMeasuresFIDAndCLIP is the acceptance test of image
// certification: a release of a simulated SDXL unit generates the
// reference's 100 prompts through the unit's own API, measures each image
// with CLIP (weights from the fake Hub, pinned to its commit) and FID's
// Inception (the real architecture at an eighth of its widths,
// deterministic weights in a temp file), computes FID against reference
// statistics and the CLIP score,
// and grades both against the catalog's ranges for 100 prompts. The sim
// draws shapes, so the scores are computed, not assumed, and the run is
// labelled simulated; the grade is whatever they give.
func TestReleaseSimSDXLMeasuresFIDAndCLIP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve and 100 images through CLIP and Inception")
	}
	fake, hc, commit := visionHub(t)
	dir := t.TempDir()
	inc := filepath.Join(dir, "inception.pth")
	if err := visiontest.WriteInception(inc, narrowInception(8)); err != nil {
		t.Fatal(err)
	}
	incBytes, err := os.ReadFile(inc)
	if err != nil {
		t.Fatal(err)
	}
	assets := map[string]tasks.Asset{
		"captions_source.tsv": asset(t, dir, "captions.tsv", captionsTSV(150)),
		"val2014.npz":         asset(t, dir, "stats.npz", statsNPZ(t, vision.FeatureDim/8)),
		vision.InceptionFile:  asset(t, dir, "inception.pth", incBytes),
	}
	url := testbin.Serve(t, "model = \"stable-diffusion-xl-base-1.0\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	ec := release.DefaultEvals()
	ec.Datasets = map[string]string{"load_image": dir}
	ec.CLIPRevision, ec.AssetReplacements = commit, assets
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowRelease, Limit: limit.Smoke,
		Store: store, Hub: hc, Evals: &ec})
	if err != nil {
		t.Fatal(err)
	}
	r := evalRow(t, out, "load_image")
	m := r.Media
	if r.NotRun != "" || r.Role != release.RoleReference || m == nil {
		raw, _ := json.Marshal(r)
		t.Fatalf("load_image not measured: %s", raw)
	}
	// The smoke limit does not cut the reference's 100 prompts: the
	// ranges are for 100 or 5000.
	if r.Samples != 100 || r.Errored != 0 || m.Asked != 100 || m.Measured != 100 {
		t.Errorf("%d samples (%d errored), figures %d of %d", r.Samples, r.Errored, m.Measured, m.Asked)
	}
	if m.FID == nil || m.CLIP == nil || m.CLIPStdev == nil || math.IsNaN(*m.FID) || *m.FID <= 0 {
		t.Fatalf("figures %+v", m)
	}
	// Graded against SDXL's ranges for 100 prompts.
	if r.Check != verdict.Pass && r.Check != verdict.Fail || m.FIDRange == nil || m.FIDRange[0] != 181.3623 || m.CLIPRange == nil || m.CLIPRange[0] != 31.68 {
		t.Errorf("grade %s (%s), ranges %v %v", r.Check, r.Basis, m.FIDRange, m.CLIPRange)
	}
	if got := m.Conditions["clip_weights"]; got != vision.CLIPRepoID+"@"+commit {
		t.Errorf("clip weights condition %v", got)
	}
	if got, _ := m.Conditions["fid_inception"].(string); !strings.Contains(got, assets[vision.InceptionFile].SHA256) {
		t.Errorf("inception condition %q", got)
	}
	if !out.Report.Metadata.Simulated {
		t.Error("the run is not labelled simulated")
	}
	md, err := os.ReadFile(filepath.Join(out.Dir, release.ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Image and Video Figures", "SIMULATED", "181.3623 – 188.162", commit} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The sample file names each prompt's image by digest and keeps FID's
	// features out.
	// (run.py's layout: evals/eval_<model>_<device>/<org>__<repo>/.)
	samples, _ := filepath.Glob(filepath.Join(out.Dir, "evals", "eval_*", "*", "samples_load_image_*.jsonl"))
	if len(samples) == 1 {
		b, _ := os.ReadFile(samples[0])
		if !strings.Contains(string(b), `"vector_length":256`) || strings.Contains(string(b), "iVBORw0KGgo") {
			t.Errorf("samples file holds %d bytes: the features' length expected, no image", len(b))
		}
	} else {
		t.Errorf("samples files %v", samples)
	}
	for _, q := range fake.Requests() {
		if q.Server == "cdn" && q.Authorization != "" {
			t.Errorf("the CDN received the token: %s", q.Path)
		}
	}
	t.Logf("sim SDXL, 100 prompts: FID %.2f (range %v), CLIP %.3f ± %.3f (range %v): %s; verdict %s", *m.FID, *m.FIDRange, *m.CLIP, *m.CLIPStdev, *m.CLIPRange, r.Check, out.Report.Acceptance.Verdict)

	// Without the statistics the reference is not measured, and the
	// reason names the exact file, its digest and where it is published.
	ec2 := release.DefaultEvals()
	ec2.Datasets = map[string]string{"load_image": t.TempDir()}
	out, err = release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke, Store: store, Hub: hc, Evals: &ec2})
	if err != nil {
		t.Fatal(err)
	}
	r = evalRow(t, out, "load_image")
	if !strings.Contains(r.NotRun, "captions_source.tsv") || !strings.Contains(r.NotRun, "2eeb95637b30fe5af26dd644bafa7affe4e5472ad0bda32d0feb1bd261280d5e") || out.Report.Acceptance.Verdict != release.VerdictIncomplete {
		t.Errorf("without assets: %q, verdict %s", r.NotRun, out.Report.Acceptance.Verdict)
	}
}

// jpegOf is a small JPEG of a flat colour.
func jpegOf(t *testing.T, c color.RGBA, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type hfImage struct {
	Bytes []byte  `parquet:"bytes"`
	Path  *string `parquet:"path,optional"`
}

// ILSVRC/imagenet-1k's and detection-datasets/coco's Parquet columns.
type (
	imagenetRow struct {
		Image hfImage `parquet:"image"`
		Label int64   `parquet:"label"`
	}
	cocoObjects struct {
		BBox     [][]float64 `parquet:"bbox,list"`
		Category []int64     `parquet:"category,list"`
	}
	cocoRow struct {
		ImageID int64       `parquet:"image_id"`
		Image   hfImage     `parquet:"image"`
		Width   int64       `parquet:"width"`
		Height  int64       `parquet:"height"`
		Objects cocoObjects `parquet:"objects"`
	}
)

func parquetWith[T any](t *testing.T, rows []T, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReleaseSimCNNs: classifiers are measured on the first ImageNet
// validation images from the (gated) Hub split, MobileNetV2 graded
// against its published figure and ResNet-50 reported beside its own;
// YOLOX-nano's COCO mAP needs boxes, which ttis's CNN server does not
// return, so it fails as the reference fails a detector without boxes.
func TestReleaseSimCNNs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	fake := hubtest.New(t)
	names := []string{"tench, Tinca tinca", "goldfish, Carassius auratus", "great white shark, white shark", "tiger shark, Galeocerdo cuvieri"}
	features := `{"info":{"features":{"image":{"_type":"Image"},"label":{"names":` + mustJSON(t, names) + `,"_type":"ClassLabel"}}}}`
	var inet []imagenetRow
	for i := range 24 {
		inet = append(inet, imagenetRow{Image: hfImage{Bytes: jpegOf(t, color.RGBA{uint8(9 * i), 80, 200, 255}, 48, 40)}, Label: int64(i % len(names))})
	}
	fake.SetBranch("dataset", "ILSVRC/imagenet-1k", "main", []hubtest.File{
		{Path: "data/validation-00000-of-00014.parquet", Content: parquetWith(t, inet, parquet.KeyValueMetadata("huggingface", features)), LFS: true},
		{Path: "data/validation-00001-of-00014.parquet", Content: []byte("a later shard, not read"), LFS: true},
	})
	fake.Gate("dataset", "ILSVRC/imagenet-1k", "hf_test")
	var coco []cocoRow
	for i := range 5 {
		coco = append(coco, cocoRow{ImageID: int64(100 + i), Image: hfImage{Bytes: jpegOf(t, color.RGBA{30, uint8(40 * i), 90, 255}, 64, 48)}, Width: 64, Height: 48,
			Objects: cocoObjects{BBox: [][]float64{{4, 5, 30, 40}, {10, 2, 60, 20}}, Category: []int64{0, 17}}})
	}
	fake.SetBranch("dataset", "detection-datasets/coco", "main", []hubtest.File{
		{Path: "data/val-00000-of-00002.parquet", Content: parquetWith(t, coco), LFS: true},
	})
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, Token: "hf_test", CacheDir: filepath.Join(t.TempDir(), "hub"), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	for _, tc := range []struct {
		model string
		check func(r release.EvalRow) error
	}{
		{"mobilenetv2", func(r release.EvalRow) error {
			if r.Samples != 20 || r.Media == nil || r.Media.Top1 == nil || r.Check != verdict.Fail && r.Check != verdict.Pass || !strings.Contains(r.Basis, "published") {
				return fmt.Errorf("not graded on 20 images")
			}
			return nil
		}},
		{"resnet-50", func(r release.EvalRow) error {
			if r.Samples != 20 || r.Check != verdict.NA || r.RatioToPublished == nil || !strings.Contains(r.Basis, "reported beside the published figure") {
				return fmt.Errorf("not reported beside 76.1")
			}
			return nil
		}},
		{"yolox_nano", func(r release.EvalRow) error {
			if r.Samples != 5 || r.Check != verdict.Fail || !strings.Contains(r.Basis, "no COCO mAP could be computed") {
				return fmt.Errorf("a detector without boxes must fail")
			}
			return nil
		}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			url := testbin.Serve(t, "model = \""+tc.model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
			tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke, Store: store, Hub: hc})
			if err != nil {
				t.Fatal(err)
			}
			r := evalRow(t, out, "load_image")
			if err := tc.check(r); err != nil {
				raw, _ := json.Marshal(r)
				t.Errorf("%v: %s", err, raw)
			}
			t.Logf("%s: score %s, %s (%s)", tc.model, pct(r.Score), r.Check, r.Basis)
		})
	}
}

func pct(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.2f", *v)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReleaseSimVideoAndEdits: a simulated Mochi unit's five videos are
// decoded (Motion JPEG), every 8th frame scored with CLIP and the mean
// graded against Mochi's range; FVD and FVMD are reported as not
// measured. A simulated image-to-image unit's one image from the
// reference's source image gets a CLIP score, reported, not graded.
func TestReleaseSimVideoAndEdits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	_, hc, commit := visionHub(t)
	dir := t.TempDir()
	src := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, src); err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]string{"file": base64.StdEncoding.EncodeToString(pngBuf.Bytes())})
	assets := map[string]tasks.Asset{
		"captions_source.tsv":          asset(t, dir, "captions.tsv", captionsTSV(8)),
		"image_client_img2img_payload": asset(t, dir, "img2img.json", payload),
	}
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	for _, tc := range []struct{ model, task string }{{"mochi-1-preview", "load_video"}, {"stable-diffusion-xl-base-1.0-img-2-img", "load_image"}} {
		t.Run(tc.model, func(t *testing.T) {
			url := testbin.Serve(t, "model = \""+tc.model+"\"\ndevice = \"t3k\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
			tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "t3k"})
			if err != nil {
				t.Fatal(err)
			}
			ec := release.DefaultEvals()
			ec.Datasets = map[string]string{tc.task: dir}
			ec.CLIPRevision, ec.AssetReplacements = commit, assets
			out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke, Store: store, Hub: hc, Evals: &ec})
			if err != nil {
				t.Fatal(err)
			}
			r := evalRow(t, out, tc.task)
			raw, _ := json.Marshal(r)
			if r.NotRun != "" || r.Errored != 0 || r.Media == nil || r.Media.CLIP == nil {
				t.Fatalf("not measured: %s", raw)
			}
			switch tc.task {
			case "load_video":
				if r.Samples != 5 || (r.Check != verdict.Pass && r.Check != verdict.Fail) || r.Media.CLIPRange == nil || r.Media.CLIPMin == nil || !strings.Contains(r.Media.NotMeasured, "FVD and FVMD") {
					t.Errorf("video not graded as the reference does: %s", raw)
				}
			default:
				if r.Samples != 1 || r.Check != verdict.NA || r.Media.FID != nil {
					t.Errorf("img2img: %s", raw)
				}
			}
			t.Logf("%s: CLIP %.3f, %s (%s)", tc.model, *r.Media.CLIP, r.Check, r.Basis)
		})
	}
}
