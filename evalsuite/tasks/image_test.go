package tasks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Every catalog reference to load_image or load_video has a variant for
// its model, so that its release can be measured.
func TestEveryMediaReferenceHasAVariant(t *testing.T) {
	n := 0
	for _, r := range catalog.EvalRefs() {
		if r.Task != "load_image" && r.Task != "load_video" {
			continue
		}
		n++
		v, has, err := VariantOf(r.Task, r.Model)
		if !has || err != nil || v == nil {
			t.Errorf("%s of %s: %v", r.Task, r.Model, err)
		}
	}
	if n < 15 {
		t.Fatalf("only %d media references in the catalog", n)
	}
	if _, _, err := VariantOf("load_image", "Llama-3.1-8B-Instruct"); err == nil || !strings.Contains(err.Error(), "is defined for stable-diffusion-xl-base-1.0") {
		t.Errorf("a text model: %v", err)
	}
	if _, has, _ := VariantOf("gsm8k", "x"); has {
		t.Error("gsm8k has variants")
	}
	if l, ok := DefaultLimit("load_image", "stabilityai/stable-diffusion-xl-base-1.0"); !ok || l != "100" {
		t.Errorf("text-to-image default limit %q %v", l, ok)
	}
	if l, ok := DefaultLimit("load_image", "mobilenetv2"); !ok || l != "" {
		t.Errorf("classifier default limit %q %v", l, ok)
	}
}

// TestReadCaptions parses a TSV laid out as MLCommons' captions_source.tsv
// (quoted captions with doubled quotes, as its rows 1110 and 1471 have)
// and compares with Python's csv module, which the reference reads it with.
func TestReadCaptions(t *testing.T) {
	tsv := "id\timage_id\tcaption\theight\twidth\tfile_name\tcoco_url\n" +
		"70\t227049\tA city at night with people walking around.\t640\t480\tf.jpg\thttp://x/f.jpg\n" +
		"173295\t565395\t\"A man holding a red frisbee that says \"\"Cheese Shop\"\" on it.\"\t480\t640\tg.jpg\thttp://x/g.jpg\n" +
		"225783\t382717\t\"Two dogs on a truck with frame that reads \"\"cockleburs galore.\"\"\"\t483\t640\th.jpg\thttp://x/h.jpg\n"
	docs, err := readCaptions([]byte(tsv), "captions_source.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		c, _ := d.Str("caption")
		got = append(got, c)
	}
	if docs[1].Source != "captions_source.tsv:3" {
		t.Errorf("source %q", docs[1].Source)
	}
	want := []string{"A city at night with people walking around.", `A man holding a red frisbee that says "Cheese Shop" on it.`, `Two dogs on a truck with frame that reads "cockleburs galore."`}
	cmd := exec.Command("python3", "-c", "import csv, json, sys\nr = csv.reader(sys.stdin, delimiter='\\t'); next(r)\nprint(json.dumps([row[2] for row in r]))")
	cmd.Stdin = strings.NewReader(tsv)
	if out, err := cmd.Output(); err == nil {
		want = nil
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("no python3 (%v): comparing with the captions as written", err)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("captions\n%q\nwant\n%q", got, want)
	}
	if _, err := readCaptions([]byte("id\timage_id\tcaption\n1\t2\n"), "c.tsv"); err == nil || !strings.Contains(err.Error(), "c.tsv:2: 2 columns") {
		t.Errorf("short row: %v", err)
	}
}

// TestNormalizeLabel follows VisionEvalsTest._normalize_label on the
// shapes ImageNet's class names have.
func TestNormalizeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"sulphur-crested cockatoo, Kakatoe galerita, Cacatua galerita": "sulphur_crested_cockatoo_kakatoe_galerita_cacatua_galerita",
		"yellow lady's slipper, yellow lady-slipper":                   "yellow_lady_s_slipper_yellow_lady_slipper",
		"  Italian greyhound ":                                         "italian_greyhound",
		"__":                                                           "",
	} {
		if got := normalizeLabel(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestAssetLocate: a missing or different file is an error that names the
// exact file, its digest and where it is published; git blob digests are
// git's own.
func TestAssetLocate(t *testing.T) {
	dir := t.TempDir()
	content := []byte("id\timage_id\tcaption\n1\t2\ta cat\n")
	sum := sha256.Sum256(content)
	a := Asset{File: "captions_source.tsv", SHA256: hex.EncodeToString(sum[:]), URL: "https://example.invalid/c.tsv", What: "captions"}
	if _, err := a.Locate(dir); err == nil || !strings.Contains(err.Error(), "captions_source.tsv") || !strings.Contains(err.Error(), a.SHA256) || !strings.Contains(err.Error(), a.URL) {
		t.Errorf("missing: %v", err)
	}
	p := filepath.Join(dir, a.File)
	if err := os.WriteFile(p, append(content, 'x'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Locate(dir); err == nil || !strings.Contains(err.Error(), "is not the published file") {
		t.Errorf("different: %v", err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Locate(dir); err != nil || got != p {
		t.Errorf("present: %q %v", got, err)
	}
	// A named pipe is refused without blocking.
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err == nil {
		if _, err := (Asset{File: "pipe", SHA256: a.SHA256}).Locate(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("pipe: %v", err)
		}
	}
	out, err := exec.Command("git", "hash-object", p).Output()
	if err != nil {
		t.Skipf("no git to compare blob hashes with: %v", err)
	}
	blob := Asset{File: a.File, GitBlob: strings.TrimSpace(string(out))}
	if _, err := blob.Locate(dir); err != nil {
		t.Errorf("git blob %s: %v", blob.GitBlob, err)
	}
}

// Without its assets a text-to-image task names every file it needs.
func TestTextToImageNeedsItsFiles(t *testing.T) {
	_, err := Build("load_image", Source{Model: "stable-diffusion-xl-base-1.0", Dataset: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "captions_source.tsv") || !strings.Contains(err.Error(), captionsAsset.SHA256) {
		t.Errorf("%v", err)
	}
	_, err = Build("load_video", Source{Model: "mochi-1-preview"})
	if err == nil || !strings.Contains(err.Error(), "captions_source.tsv") {
		t.Errorf("%v", err)
	}
	v, _, _ := VariantOf("load_image", "stable-diffusion-xl-base-1.0")
	hint := AssetsHint("load_image", v)
	for _, want := range []string{"val2014.npz", statsAsset.GitBlob, "pt_inception-2015-12-05-6726825d.pth", "--dataset load_image=FOLDER"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint lacks %q: %s", want, hint)
		}
	}
}

type imagenetRow struct {
	Image struct {
		Bytes []byte  `parquet:"bytes"`
		Path  *string `parquet:"path,optional"`
	} `parquet:"image"`
	Label int64 `parquet:"label"`
}

// TestClassifierReadsClassNames: the expected label is the ClassLabel name
// the Parquet file's Hugging Face features give, and a hit needs the
// normalised names to agree.
func TestClassifierReadsClassNames(t *testing.T) {
	dir := t.TempDir()
	img := tinyPNG(t)
	rows := make([]imagenetRow, 3)
	for i := range rows {
		rows[i].Image.Bytes, rows[i].Label = img, int64(i)
	}
	features := `{"info":{"features":{"image":{"_type":"Image"},"label":{"names":["tench, Tinca tinca","goldfish, Carassius auratus","great white shark"],"_type":"ClassLabel"}}}}`
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[imagenetRow](&buf, parquet.KeyValueMetadata("huggingface", features))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "validation-00000-of-00014.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := Build("load_image", Source{Model: "mobilenetv2", Dataset: p})
	if err != nil {
		t.Fatal(err)
	}
	if task.Config["grading"] != GradeTop1Published {
		t.Errorf("mobilenetv2 grading %v", task.Config["grading"])
	}
	if got, _ := task.DocToTarget(task.Docs[1]); got != "goldfish, Carassius auratus" {
		t.Errorf("target %q", got)
	}
	reqs, err := task.MediaRequests(task.Docs[0])
	if err != nil || reqs[0].Kind != evalsuite.KindClassify || !bytes.Equal(reqs[0].Media.Images["prompt"], img) {
		t.Fatalf("%+v %v", reqs, err)
	}
	for pred, want := range map[string]float64{"goldfish, Carassius auratus": 1, "Goldfish - Carassius auratus": 1, "goldfish": 0, "": 0} {
		s, err := task.ProcessMedia(task.Docs[1], []evalsuite.Response{{Text: pred}})
		if err != nil || s["top1"][0] != want {
			t.Errorf("%q: %v %v", pred, s, err)
		}
	}
	other, err := Build("load_image", Source{Model: "resnet-50", Dataset: dir})
	if err != nil || other.Config["grading"] != GradeTop1Reported || len(other.Docs) != 3 {
		t.Errorf("resnet-50: %v %v", other, err)
	}
}

// TestDetectorMAP: the detector's documents carry objects and boxes to the
// corpus metric; perfect boxes score 1, none score nothing (NaN, which the
// grade fails), and an unanswered image keeps its objects.
func TestDetectorMAP(t *testing.T) {
	doc := evalsuite.Doc{Source: "coco:0", Fields: map[string]any{"image_id": 42.0, "objects": map[string]any{
		"bbox": []any{[]any{10.0, 20.0, 60.0, 80.0}, []any{0.0, 0.0, 5.0}}, "category": []any{3.0, 1.0}}}}
	_, gts, err := cocoTruth(doc)
	if err != nil || len(gts) != 1 || gts[0].Box.W != 50 || gts[0].Box.H != 60 || gts[0].Image != 42 {
		t.Fatalf("%+v %v", gts, err)
	}
	perfect := cocoVector(42, gts, [][6]float64{{10, 20, 60, 80, 0.9, 3}})
	if v := cocoMAP([][]float64{perfect}); math.Abs(v-1) > 1e-12 {
		t.Errorf("perfect box: mAP %v", v)
	}
	if v := cocoMAP([][]float64{cocoVector(42, gts, nil)}); !math.IsNaN(v) {
		t.Errorf("no boxes: mAP %v, want NaN", v)
	}
	missed := cocoVector(7, gts, nil)
	if v := cocoMAP([][]float64{perfect, missed}); math.Abs(v-0.5) > 0.01 {
		t.Errorf("one of two objects found: mAP %v", v)
	}
}

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	// A 1x1 PNG.
	b, err := hex.DecodeString("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCatalogCompleteness counts the default catalog specs whose every
// accuracy reference ttis can measure (issue #25 asked for at least 160 of
// the 180 with references, with the IFEval work beside this one).
func TestCatalogCompleteness(t *testing.T) {
	withRefs, complete := 0, 0
	missing := map[string]int{}
	for _, s := range catalog.Specs() {
		if !s.DefaultImpl {
			continue
		}
		c := catalog.ReleaseCompleteness(&s, WhyNotMeasurable)
		if c.References == 0 {
			continue
		}
		withRefs++
		if c.Complete {
			complete++
		}
		for _, u := range c.Unmeasurable {
			if !u.Waived {
				missing[u.Task]++
			}
		}
		if s.ModelName == "stable-diffusion-xl-base-1.0" && !c.Complete {
			t.Errorf("SDXL on %s cannot complete: %+v", s.Device, c.Unmeasurable)
		}
	}
	t.Logf("%d of %d default specs with accuracy references can complete; specs held back by: %v", complete, withRefs, missing)
	if complete < 160 {
		t.Errorf("%d of %d specs can complete, want at least 160", complete, withRefs)
	}
	if missing["load_image"] > 0 || missing["load_video"] > 0 {
		t.Errorf("media references still unmeasurable: %v", missing)
	}
}

// FuzzMediaInputs feeds the readers of the image tasks' inputs (the
// captions TSV, the edit payloads, a generated image, a detector row's
// vector) with arbitrary bytes: they must fail cleanly.
func FuzzMediaInputs(f *testing.F) {
	f.Add([]byte("id\timage_id\tcaption\n1\t2\t\"a \"\"cat\"\"\"\n"))
	f.Add([]byte(`{"inpaint_image":"iVBORw0KGgo=","inpaint_mask":"AAAA"}`))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = readCaptions(b, "f.tsv")
		_, _ = editPayload(b, true, "f")
		_, _ = editPayload(b, false, "f")
		_, _ = decodeImage(b)
		_, _ = imageBytes(map[string]any{"bytes": string(b)})
		v := make([]float64, len(b)/8)
		for i := range v {
			v[i] = float64(int8(b[i*8])) // small counts and coordinates
		}
		_ = cocoMAP([][]float64{v})
	})
}
