package cocoeval

import (
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files with pycocotools (PYTHONPATH must reach it)")

// cocoSet is a detection set in COCO's JSON layout: the ground truth
// dataset and the results list loadRes reads.
type cocoSet struct {
	Images []struct {
		ID     int `json:"id"`
		Width  int `json:"width"`
		Height int `json:"height"`
	} `json:"images"`
	Annotations []struct {
		ID       int        `json:"id"`
		ImageID  int        `json:"image_id"`
		Category int        `json:"category_id"`
		BBox     [4]float64 `json:"bbox"`
		Area     float64    `json:"area"`
		IsCrowd  int        `json:"iscrowd"`
	} `json:"annotations"`
	Categories []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	} `json:"categories"`
	Results []struct {
		ImageID  int        `json:"image_id"`
		Category int        `json:"category_id"`
		BBox     [4]float64 `json:"bbox"`
		Score    float64    `json:"score"`
	} `json:"results"`
}

// synthetic builds a detection set that exercises every branch of the
// evaluation: objects of the three size classes, crowd regions, missed
// objects, duplicates, false positives, tied scores (rounded to two
// decimals), detections outside every object, categories without ground
// truth, and one image with more than 100 detections.
func synthetic() cocoSet {
	rng := rand.New(rand.NewPCG(2024, 25))
	var s cocoSet
	for c := range 80 {
		s.Categories = append(s.Categories, struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		}{c, "c"})
	}
	round := func(x float64) float64 { return math.Round(x*100) / 100 }
	annID := 1
	for img := 1; img <= 30; img++ {
		s.Images = append(s.Images, struct {
			ID     int `json:"id"`
			Width  int `json:"width"`
			Height int `json:"height"`
		}{img * 7, 640, 480})
		id := img * 7
		nobj := 1 + rng.IntN(6)
		for range nobj {
			side := []float64{12, 24, 50, 80, 150, 300}[rng.IntN(6)] * (0.7 + 0.6*rng.Float64())
			w, h := side*(0.6+0.8*rng.Float64()), side*(0.6+0.8*rng.Float64())
			x, y := rng.Float64()*(640-w), rng.Float64()*(480-h)
			cat := rng.IntN(6)
			crowd := 0
			if rng.IntN(12) == 0 {
				crowd = 1
			}
			s.Annotations = append(s.Annotations, struct {
				ID       int        `json:"id"`
				ImageID  int        `json:"image_id"`
				Category int        `json:"category_id"`
				BBox     [4]float64 `json:"bbox"`
				Area     float64    `json:"area"`
				IsCrowd  int        `json:"iscrowd"`
			}{annID, id, cat, [4]float64{x, y, w, h}, w * h, crowd})
			annID++
			// Found most of the time, with jitter; sometimes twice.
			for k := range 1 + rng.IntN(2) {
				if rng.Float64() < 0.2 && k == 0 {
					continue
				}
				j := func(v, scale float64) float64 { return v + (rng.Float64()-0.5)*scale*0.4 }
				c := cat
				if rng.IntN(10) == 0 {
					c = rng.IntN(8) // wrong class, sometimes one without objects
				}
				s.Results = append(s.Results, struct {
					ImageID  int        `json:"image_id"`
					Category int        `json:"category_id"`
					BBox     [4]float64 `json:"bbox"`
					Score    float64    `json:"score"`
				}{id, c, [4]float64{j(x, w), j(y, h), j(w, w), j(h, h)}, round(rng.Float64())})
			}
		}
		if img%5 == 0 {
			// A crowd region around an object, and a detection between
			// the two: it matches the object at a low threshold and the
			// crowd better, which COCOeval must not prefer.
			o := s.Annotations[len(s.Annotations)-1]
			b := o.BBox
			crowd := [4]float64{b[0] - b[2]*0.3, b[1] - b[3]*0.3, b[2] * 1.6, b[3] * 1.6}
			s.Annotations = append(s.Annotations, struct {
				ID       int        `json:"id"`
				ImageID  int        `json:"image_id"`
				Category int        `json:"category_id"`
				BBox     [4]float64 `json:"bbox"`
				Area     float64    `json:"area"`
				IsCrowd  int        `json:"iscrowd"`
			}{annID, id, o.Category, crowd, crowd[2] * crowd[3], 1})
			annID++
			s.Results = append(s.Results, struct {
				ImageID  int        `json:"image_id"`
				Category int        `json:"category_id"`
				BBox     [4]float64 `json:"bbox"`
				Score    float64    `json:"score"`
			}{id, o.Category, [4]float64{b[0] - b[2]*0.15, b[1] - b[3]*0.15, b[2] * 1.3, b[3] * 1.3}, 0.97})
		}
		nfp := rng.IntN(4)
		if img == 13 {
			nfp = 130 // more than maxDets
		}
		for range nfp {
			w, h := 10+rng.Float64()*200, 10+rng.Float64()*200
			s.Results = append(s.Results, struct {
				ImageID  int        `json:"image_id"`
				Category int        `json:"category_id"`
				BBox     [4]float64 `json:"bbox"`
				Score    float64    `json:"score"`
			}{id, rng.IntN(6), [4]float64{rng.Float64() * 500, rng.Float64() * 300, w, h}, round(rng.Float64() * 0.6)})
		}
	}
	return s
}

// pycocotoolsStats runs pycocotools' COCOeval as tt-inference-server's
// _score_yolox_coco_predictions does (imgIds from the images, bbox).
const pycocotoolsStats = `
import json, sys
import numpy as np
if not hasattr(np, 'float'):
    np.float = float  # cocoapi's master branch still names np.float
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
s = json.load(open(sys.argv[1]))
gt = COCO()
gt.dataset = {k: s[k] for k in ('images', 'annotations', 'categories')}
gt.createIndex()
dt = gt.loadRes(s['results'])
e = COCOeval(gt, dt, 'bbox')
e.params.imgIds = [m['id'] for m in s['images']]
e.evaluate(); e.accumulate(); e.summarize()
print(json.dumps([float(x) for x in e.stats]))
`

func evaluateSet(s cocoSet) Stats {
	var imgs, cats []int
	for _, im := range s.Images {
		imgs = append(imgs, im.ID)
	}
	for _, c := range s.Categories {
		cats = append(cats, c.ID)
	}
	var gts []GT
	for _, a := range s.Annotations {
		gts = append(gts, GT{Image: a.ImageID, Category: a.Category, Box: Box{a.BBox[0], a.BBox[1], a.BBox[2], a.BBox[3]}, Area: a.Area, Crowd: a.IsCrowd != 0})
	}
	var dets []Det
	for _, r := range s.Results {
		dets = append(dets, Det{Image: r.ImageID, Category: r.Category, Box: Box{r.BBox[0], r.BBox[1], r.BBox[2], r.BBox[3]}, Score: r.Score})
	}
	return Evaluate(imgs, cats, gts, dets)
}

// TestMatchesPycocotools compares the twelve statistics with pycocotools'
// on the synthetic set. pycocotools is not packaged by Debian 12, so the
// golden numbers come from cocodataset/cocoapi's PythonAPI built in a
// developer's session (go test -update with it on PYTHONPATH); when
// pycocotools is importable the test also runs it now.
func TestMatchesPycocotools(t *testing.T) {
	set := synthetic()
	setFile := filepath.Join("testdata", "synthetic.json")
	goldFile := filepath.Join("testdata", "pycocotools_stats.json")
	if *update {
		b, _ := json.MarshalIndent(set, "", " ")
		if err := os.WriteFile(setFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []float64
	ran := false
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import pycocotools.cocoeval").Run() != nil {
			continue
		}
		out, err := exec.Command(py, "-c", pycocotoolsStats, setFile).Output()
		if err != nil {
			t.Fatalf("pycocotools: %v", err)
		}
		if err := json.Unmarshal(lastLine(out), &want); err != nil {
			t.Fatalf("pycocotools printed %q: %v", out, err)
		}
		ran = true
		if *update {
			b, _ := json.Marshal(want)
			if err := os.WriteFile(goldFile, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		break
	}
	if !ran {
		if *update {
			t.Fatal("-update needs pycocotools importable (build cocodataset/cocoapi's PythonAPI and put it on PYTHONPATH)")
		}
		t.Log("pycocotools not importable (Debian 12 does not package it): comparing with the golden statistics it gave")
		b, err := os.ReadFile(goldFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
	}
	var onDisk cocoSet
	b, err := os.ReadFile(setFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatal(err)
	}
	got := evaluateSet(onDisk)
	t.Logf("mAP %.6f (pycocotools %.6f)", got.AP(), want[0])
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("stats[%d] = %.15g, pycocotools %.15g", i, got[i], want[i])
		}
	}
	if got.AP() <= 0.05 || got.AP() >= 0.95 {
		t.Errorf("the synthetic set scores %v: it should be neither hopeless nor perfect", got.AP())
	}
}

func lastLine(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return b[i+1:]
		}
	}
	return b
}

func TestEmptyAndPerfect(t *testing.T) {
	gts := []GT{{Image: 1, Category: 3, Box: Box{10, 10, 50, 40}, Area: 2000}, {Image: 2, Category: 3, Box: Box{0, 0, 200, 200}, Area: 40000}}
	if s := Evaluate([]int{1, 2}, []int{3}, gts, nil); s.AP() != 0 {
		t.Errorf("no detections: AP %v, want 0", s.AP())
	}
	if s := Evaluate([]int{1, 2}, []int{3}, nil, nil); s.AP() != -1 {
		t.Errorf("no ground truth: AP %v, want -1", s.AP())
	}
	dets := []Det{{Image: 1, Category: 3, Box: gts[0].Box, Score: 0.9}, {Image: 2, Category: 3, Box: gts[1].Box, Score: 0.8}}
	if s := Evaluate([]int{1, 2}, []int{3}, gts, dets); math.Abs(s.AP()-1) > 1e-12 {
		t.Errorf("perfect detections: AP %v, want 1", s.AP())
	}
}
