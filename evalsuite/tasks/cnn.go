package tasks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/cocoeval"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
)

// The CNN evals (cnn_eval_tests.py, vision_evals_test.py): classifiers by
// top-1 on the first ImageNet validation images, YOLOX-nano by COCO mAP.

var (
	// imagenetData is what VisionEvalsTest._download_samples streams:
	// ILSVRC/imagenet-1k, split validation, the first 20 rows, which are
	// the first rows of the split's first shard.
	imagenetData = []HubData{{Role: RoleTest, Repo: "ILSVRC/imagenet-1k", Split: "validation", Files: "data/validation-00000-of-*.parquet", Gated: true}}
	// cocoData is what _collect_yolox_coco_predictions streams:
	// detection-datasets/coco, split val, the first 100 rows.
	cocoData = []HubData{{Role: RoleTest, Repo: "detection-datasets/coco", Split: "val", Files: "data/val-00000-of-*.parquet"}}
)

const (
	imagenetImages = 20  // DEFAULT_DATASET_DOWNLOAD_COUNT
	cocoImages     = 100 // DEFAULT_COCO_NUM_IMAGES
	cocoTopK       = 300 // COCO_EVAL_TOP_K
	cocoMinConf    = 1.0 // COCO_EVAL_MIN_CONFIDENCE, percent
)

// gradedClassifiers are the classifiers the reference grades
// (cnn_eval_tests.py runs VisionEvalsTest for MobileNetV2 alone).
var gradedClassifiers = map[string]bool{"mobilenetv2": true}

// loadRows reads the first n rows of a split (a file, or a folder of
// shards).
func loadRows(p string, n int) ([]evalsuite.Doc, error) {
	opts := dataset.Options{MaxRows: n}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return dataset.LoadDir(p, opts)
	}
	return dataset.Load(p, opts)
}

// firstParquet is the split's first Parquet file.
func firstParquet(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return p, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".parquet") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%s holds no Parquet file", p)
	}
	sort.Strings(names)
	return filepath.Join(p, names[0]), nil
}

// classNames reads a ClassLabel's names from the Hugging Face features a
// Parquet file carries in its "huggingface" metadata, which is where
// datasets takes label_feature.names from.
func classNames(p, column string) ([]string, error) {
	f, err := firstParquet(p)
	if err != nil {
		return nil, err
	}
	v, ok, err := dataset.ParquetKeyValue(f, "huggingface")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s carries no Hugging Face features (\"huggingface\" metadata), so its %q classes have no names", filepath.Base(f), column)
	}
	var meta struct {
		Info struct {
			Features map[string]struct {
				Type  string   `json:"_type"`
				Names []string `json:"names"`
			} `json:"features"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(v), &meta); err != nil {
		return nil, fmt.Errorf("%s: \"huggingface\" metadata: %w", filepath.Base(f), err)
	}
	feat, ok := meta.Info.Features[column]
	if !ok || feat.Type != "ClassLabel" || len(feat.Names) == 0 {
		return nil, fmt.Errorf("%s: feature %q is not a ClassLabel with names", filepath.Base(f), column)
	}
	return feat.Names, nil
}

// imageBytes reads a dataset's Image feature ({"bytes", "path"}: raw bytes
// from Parquet, base64 text from JSON Lines).
func imageBytes(v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("image is a %T, want the Image feature's {bytes, path}", v)
	}
	s, _ := m["bytes"].(string)
	if s == "" {
		return nil, fmt.Errorf("image has no bytes (a path-only image is not supported: the Hub's Parquet files carry the bytes)")
	}
	raw := []byte(s)
	if _, _, err := image.DecodeConfig(bytes.NewReader(raw)); err != nil {
		dec, derr := base64.StdEncoding.DecodeString(s)
		if derr != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		if _, _, err := image.DecodeConfig(bytes.NewReader(dec)); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		raw = dec
	}
	return raw, nil
}

// normalizeLabel is VisionEvalsTest._normalize_label: lower case, '-' and
// ' ' to '_', anything but letters, digits and '_' to '_', runs of '_'
// collapsed, '_' trimmed.
func normalizeLabel(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	out := b.String()
	for strings.Contains(out, "__") {
		out = strings.ReplaceAll(out, "__", "_")
	}
	return strings.Trim(out, "_")
}

func buildClassifier(src Source) (*evalsuite.Task, error) {
	if src.Dataset == "" {
		return nil, fmt.Errorf("needs the first %d images of %s", imagenetImages, describeData(imagenetData))
	}
	docs, err := loadRows(src.Dataset, imagenetImages)
	if err != nil {
		return nil, err
	}
	names, err := classNames(src.Dataset, "label")
	if err != nil {
		return nil, err
	}
	expected := func(d evalsuite.Doc) (string, error) {
		id, err := d.Int("label")
		if err != nil {
			return "", err
		}
		if id < 0 || id >= len(names) {
			return "", fmt.Errorf("%s: label %d outside the %d classes", d.Source, id, len(names))
		}
		return names[id], nil
	}
	grading := GradeTop1Reported
	if gradedClassifiers[strings.ToLower(src.Model)] {
		grading = GradeTop1Published
	}
	return &evalsuite.Task{
		Name: "load_image", Version: "classifier", Output: evalsuite.Media, Docs: docs,
		DocToTarget: expected,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			img, err := imageBytes(d.Fields["image"])
			if err != nil {
				return nil, fmt.Errorf("%s: field \"image\": %w", d.Source, err)
			}
			return []evalsuite.Instance{{Kind: evalsuite.KindClassify, Context: d.Source,
				Media: evalsuite.NewMediaArgs("/v1/cnn/search-image", nil, map[string][]byte{"prompt": img})}}, nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			want, err := expected(d)
			if err != nil {
				return nil, err
			}
			if len(resps) != 1 {
				return nil, fmt.Errorf("%s: %d answers for one image", d.Source, len(resps))
			}
			k := normalizeLabel(want)
			hit := 0.0
			if k != "" && k == normalizeLabel(resps[0].Text) {
				hit = 1
			}
			return evalsuite.Scores{"top1": {hit}}, nil
		},
		Metrics: []evalsuite.MetricSpec{{Name: "top1", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "load_image", "variant": "classifier", "grading": grading, "model": src.Model,
			"dataset_path": "ILSVRC/imagenet-1k", "test_split": "validation", "images": imagenetImages,
			"request": "POST /v1/cnn/search-image {\"prompt\": base64 of the dataset's JPEG} (the reference re-encodes each image with PIL before sending it, and sends a data URL)",
			"follows": "tt-inference-server vision_evals_test.py VisionEvalsTest (_download_samples, _extract_prediction, _normalize_label), cnn_eval_tests.py run_cnn_eval",
		},
	}, nil
}

// The detector's documents carry their ground truth and boxes to the
// corpus metric as one vector: image id, object count, then x, y, w, h,
// category per object, then x, y, w, h, score, class per box.
func cocoVector(id int, gts []cocoeval.GT, boxes [][6]float64) []float64 {
	v := []float64{float64(id), float64(len(gts))}
	for _, g := range gts {
		v = append(v, g.Box.X, g.Box.Y, g.Box.W, g.Box.H, float64(g.Category))
	}
	for _, b := range boxes {
		// The server's [x1, y1, x2, y2] as COCO's [x, y, w, h]
		// (_corner_to_height_width_format).
		v = append(v, b[0], b[1], b[2]-b[0], b[3]-b[1], b[4], b[5])
	}
	return v
}

// cocoTruth reads a detection-datasets/coco row's objects: xyxy boxes and
// categories 0-79; a box that is not four numbers is skipped, as the
// reference skips it.
func cocoTruth(d evalsuite.Doc) (int, []cocoeval.GT, error) {
	id, err := d.Int("image_id")
	if err != nil {
		return 0, nil, err
	}
	obj, _ := d.Fields["objects"].(map[string]any)
	cats, _ := obj["category"].([]any)
	boxes, _ := obj["bbox"].([]any)
	var gts []cocoeval.GT
	for i := range min(len(cats), len(boxes)) {
		c, ok := cats[i].(float64)
		b, ok2 := boxes[i].([]any)
		if !ok || !ok2 || len(b) != 4 {
			continue
		}
		var xy [4]float64
		good := true
		for k := range 4 {
			f, ok := b[k].(float64)
			good = good && ok
			xy[k] = f
		}
		if !good {
			continue
		}
		w, h := xy[2]-xy[0], xy[3]-xy[1]
		gts = append(gts, cocoeval.GT{Image: id, Category: int(c), Box: cocoeval.Box{X: xy[0], Y: xy[1], W: w, H: h}, Area: w * h})
	}
	return id, gts, nil
}

// cocoMAP is COCOeval's stats[0] over every document (categories 0-79,
// as the reference's ground truth declares them), floored at 0; NaN when
// there is nothing to score (no boxes or no objects), which the reference
// fails.
func cocoMAP(perDoc [][]float64) float64 {
	var imgs []int
	var gts []cocoeval.GT
	var dets []cocoeval.Det
	for _, v := range perDoc {
		if len(v) < 2 {
			continue
		}
		id, n := int(v[0]), int(v[1])
		imgs = append(imgs, id)
		rest := v[2:]
		if n < 0 || len(rest) < 5*n {
			continue
		}
		for i := range n {
			o := rest[5*i:]
			gts = append(gts, cocoeval.GT{Image: id, Category: int(o[4]), Box: cocoeval.Box{X: o[0], Y: o[1], W: o[2], H: o[3]}, Area: o[2] * o[3]})
		}
		rest = rest[5*n:]
		for ; len(rest) >= 6; rest = rest[6:] {
			dets = append(dets, cocoeval.Det{Image: id, Category: int(rest[5]), Box: cocoeval.Box{X: rest[0], Y: rest[1], W: rest[2], H: rest[3]}, Score: rest[4]})
		}
	}
	if len(gts) == 0 || len(dets) == 0 {
		return math.NaN()
	}
	cats := make([]int, 80)
	for i := range cats {
		cats[i] = i
	}
	return max(cocoeval.Evaluate(imgs, cats, gts, dets).AP(), 0)
}

func buildDetector(src Source) (*evalsuite.Task, error) {
	if src.Dataset == "" {
		return nil, fmt.Errorf("needs the first %d images of %s", cocoImages, describeData(cocoData))
	}
	docs, err := loadRows(src.Dataset, cocoImages)
	if err != nil {
		return nil, err
	}
	fields := map[string]any{"top_k": cocoTopK, "min_confidence": cocoMinConf, "response_format": "json"}
	return &evalsuite.Task{
		Name: "load_image", Version: "detector", Output: evalsuite.Media, Docs: docs,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			img, err := imageBytes(d.Fields["image"])
			if err != nil {
				return nil, fmt.Errorf("%s: field \"image\": %w", d.Source, err)
			}
			return []evalsuite.Instance{{Kind: evalsuite.KindDetect, Context: d.Source,
				Media: evalsuite.NewMediaArgs("/v1/cnn/search-image", fields, map[string][]byte{"prompt": img})}}, nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			id, gts, err := cocoTruth(d)
			if err != nil {
				return nil, err
			}
			if len(resps) != 1 {
				return nil, fmt.Errorf("%s: %d answers for one image", d.Source, len(resps))
			}
			return evalsuite.Scores{"map": cocoVector(id, gts, resps[0].Boxes)}, nil
		},
		// An image the server could not answer keeps its objects, with no
		// boxes: the reference adds the ground truth before asking.
		ErroredScores: func(d evalsuite.Doc) (evalsuite.Scores, error) {
			id, gts, err := cocoTruth(d)
			if err != nil {
				return nil, err
			}
			return evalsuite.Scores{"map": cocoVector(id, gts, nil)}, nil
		},
		Metrics: []evalsuite.MetricSpec{{Name: "map", Aggregation: "coco_map", HigherIsBetter: true, Vector: true, Corpus: cocoMAP}},
		Config: map[string]any{
			"task": "load_image", "variant": "detector", "grading": GradeMAPPublished, "model": src.Model,
			"dataset_path": "detection-datasets/coco", "test_split": "val", "images": cocoImages,
			"request": map[string]any{"route": "/v1/cnn/search-image", "top_k": cocoTopK, "min_confidence": cocoMinConf, "response_format": "json",
				"image": "base64 of the dataset's JPEG (the reference re-encodes it with PIL and sends a data URL)"},
			"metric":  "COCOeval bbox stats[0] (mAP@[.5:.95]), categories 0-79, floored at 0",
			"follows": "tt-inference-server cnn_eval_tests.py _run_yolox_coco_eval",
		},
	}, nil
}
