// Package cocoeval computes COCO's bounding-box detection metrics the way
// pycocotools' COCOeval does (evaluate, accumulate, summarize with
// iouType "bbox" and the default parameters): IoU thresholds .50:.05:.95,
// 101 recall points, at most 1, 10 and 100 detections per image, all,
// small, medium and large areas. tt-inference-server grades YOLOX-nano
// with stats[0], the mean average precision over the ten IoU thresholds
// (test_module/eval_tests/cnn_eval_tests.py). The tests compare every one
// of the twelve numbers with pycocotools' on a synthetic detection set.
package cocoeval

import (
	"math"
	"slices"
	"sort"
)

// Box is an axis-aligned box: its top-left corner and size (COCO's
// [x, y, w, h]).
type Box struct{ X, Y, W, H float64 }

// GT is a ground-truth object. Area decides its size class (COCO keeps the
// segment's area; a box-only set uses w·h); a crowd region is matched by
// any number of detections and never counted as missed.
type GT struct {
	Image, Category int
	Box             Box
	Area            float64
	Crowd           bool
}

// Det is a detection; its area is the box's, as loadRes sets it.
type Det struct {
	Image, Category int
	Box             Box
	Score           float64
}

// Stats are COCOeval.stats: AP at IoU .50:.95, .50 and .75, AP for small,
// medium and large objects, AR at 1, 10 and 100 detections, AR for small,
// medium and large. A value is -1 when nothing could be measured (no
// ground truth of any evaluated category).
type Stats [12]float64

// AP is stats[0], the COCO mAP.
func (s Stats) AP() float64 { return s[0] }

var (
	iouThrs  = linspace(0.5, 0.95, 10)
	recThrs  = linspace(0, 1, 101)
	maxDets  = []int{1, 10, 100}
	areaRngs = [][2]float64{{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}}
)

// linspace is numpy.linspace(start, stop, num) with its rounding:
// arange(num)*step + start, the last value stop exactly.
func linspace(start, stop float64, num int) []float64 {
	step := (stop - start) / float64(num-1)
	out := make([]float64, num)
	for i := range out {
		out[i] = float64(i)*step + start
	}
	out[num-1] = stop
	return out
}

// evalImg is one (image, category, area range) evaluation.
type evalImg struct {
	dtMatched [][]bool // [threshold][detection]
	dtIgnore  [][]bool
	dtScores  []float64
	gtIgnore  []bool
}

// Evaluate scores dets against gts over images and categories (the
// parameters' imgIds and catIds: objects of other images or categories
// are not evaluated).
func Evaluate(images, categories []int, gts []GT, dets []Det) Stats {
	imgs := unique(images)
	cats := unique(categories)
	inImg, inCat := set(imgs), set(cats)
	type key struct{ img, cat int }
	gtBy := map[key][]GT{}
	for _, g := range gts {
		if inImg[g.Image] && inCat[g.Category] {
			k := key{g.Image, g.Category}
			gtBy[k] = append(gtBy[k], g)
		}
	}
	dtBy := map[key][]Det{}
	for _, d := range dets {
		if inImg[d.Image] && inCat[d.Category] {
			k := key{d.Image, d.Category}
			dtBy[k] = append(dtBy[k], d)
		}
	}
	maxDet := maxDets[len(maxDets)-1]
	// evals[cat][area][img], nil where the image has neither ground
	// truth nor detections of the category.
	evals := make([][][]*evalImg, len(cats))
	for ci, c := range cats {
		evals[ci] = make([][]*evalImg, len(areaRngs))
		for ai, rng := range areaRngs {
			evals[ci][ai] = make([]*evalImg, len(imgs))
			for ii, im := range imgs {
				evals[ci][ai][ii] = evaluateImg(gtBy[key{im, c}], dtBy[key{im, c}], rng, maxDet)
			}
		}
	}
	T, R, K, A, M := len(iouThrs), len(recThrs), len(cats), len(areaRngs), len(maxDets)
	precision := make([]float64, T*R*K*A*M) // [t][r][k][a][m]
	recall := make([]float64, T*K*A*M)      // [t][k][a][m]
	for i := range precision {
		precision[i] = -1
	}
	for i := range recall {
		recall[i] = -1
	}
	pIdx := func(t, r, k, a, m int) int { return (((t*R+r)*K+k)*A+a)*M + m }
	rIdx := func(t, k, a, m int) int { return ((t*K+k)*A+a)*M + m }
	for k := range cats {
		for a := range areaRngs {
			for m, md := range maxDets {
				var es []*evalImg
				for _, e := range evals[k][a] {
					if e != nil {
						es = append(es, e)
					}
				}
				if len(es) == 0 {
					continue
				}
				type dt struct {
					score         float64
					matched, ignr []bool
				}
				var all []dt
				npig := 0
				for _, e := range es {
					n := min(md, len(e.dtScores))
					for j := range n {
						d := dt{score: e.dtScores[j], matched: make([]bool, T), ignr: make([]bool, T)}
						for t := range T {
							d.matched[t], d.ignr[t] = e.dtMatched[t][j], e.dtIgnore[t][j]
						}
						all = append(all, d)
					}
					for _, ig := range e.gtIgnore {
						if !ig {
							npig++
						}
					}
				}
				if npig == 0 {
					continue
				}
				// np.argsort(-scores, kind='mergesort'): stable.
				sort.SliceStable(all, func(i, j int) bool { return -all[i].score < -all[j].score })
				nd := len(all)
				for t := range T {
					tp := make([]float64, nd)
					fp := make([]float64, nd)
					var ctp, cfp float64
					for i, d := range all {
						if d.matched[t] && !d.ignr[t] {
							ctp++
						}
						if !d.matched[t] && !d.ignr[t] {
							cfp++
						}
						tp[i], fp[i] = ctp, cfp
					}
					rc := make([]float64, nd)
					pr := make([]float64, nd)
					for i := range nd {
						rc[i] = tp[i] / float64(npig)
						pr[i] = tp[i] / (fp[i] + tp[i] + eps)
					}
					if nd > 0 {
						recall[rIdx(t, k, a, m)] = rc[nd-1]
					} else {
						recall[rIdx(t, k, a, m)] = 0
					}
					for i := nd - 1; i > 0; i-- {
						if pr[i] > pr[i-1] {
							pr[i-1] = pr[i]
						}
					}
					for ri, r := range recThrs {
						// np.searchsorted(rc, r, side='left'); an index
						// past the end leaves the precision 0.
						pi := sort.SearchFloat64s(rc, r)
						q := 0.0
						if pi < nd {
							q = pr[pi]
						}
						precision[pIdx(t, ri, k, a, m)] = q
					}
				}
			}
		}
	}
	summarize := func(ap bool, thr float64, area, md int) float64 {
		var sum float64
		n := 0
		for t := range T {
			if !math.IsNaN(thr) && iouThrs[t] != thr {
				continue
			}
			for k := range K {
				if ap {
					for r := range R {
						if v := precision[pIdx(t, r, k, area, md)]; v > -1 {
							sum += v
							n++
						}
					}
				} else if v := recall[rIdx(t, k, area, md)]; v > -1 {
					sum += v
					n++
				}
			}
		}
		if n == 0 {
			return -1
		}
		return sum / float64(n)
	}
	all := math.NaN()
	last := M - 1
	return Stats{
		summarize(true, all, 0, last),
		summarize(true, 0.5, 0, last),
		summarize(true, 0.75, 0, last),
		summarize(true, all, 1, last),
		summarize(true, all, 2, last),
		summarize(true, all, 3, last),
		summarize(false, all, 0, 0),
		summarize(false, all, 0, 1),
		summarize(false, all, 0, last),
		summarize(false, all, 1, last),
		summarize(false, all, 2, last),
		summarize(false, all, 3, last),
	}
}

// eps is np.spacing(1), which COCOeval adds to precision's denominator.
const eps = 2.220446049250313e-16

// evaluateImg is COCOeval.evaluateImg for one image and category.
func evaluateImg(gt []GT, dt []Det, rng [2]float64, maxDet int) *evalImg {
	if len(gt) == 0 && len(dt) == 0 {
		return nil
	}
	// Detections by score (stable), the best maxDet; ground truth with
	// the objects outside the area range (or crowds) last.
	dt = slices.Clone(dt)
	sort.SliceStable(dt, func(i, j int) bool { return -dt[i].Score < -dt[j].Score })
	if len(dt) > maxDet {
		dt = dt[:maxDet]
	}
	gtIg := make([]bool, len(gt))
	for i, g := range gt {
		gtIg[i] = g.Crowd || g.Area < rng[0] || g.Area > rng[1]
	}
	order := make([]int, len(gt))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return !gtIg[order[i]] && gtIg[order[j]] })
	g := make([]GT, len(gt))
	ig := make([]bool, len(gt))
	for i, o := range order {
		g[i], ig[i] = gt[o], gtIg[o]
	}
	T := len(iouThrs)
	e := &evalImg{gtIgnore: ig, dtScores: make([]float64, len(dt)), dtMatched: make([][]bool, T), dtIgnore: make([][]bool, T)}
	for i, d := range dt {
		e.dtScores[i] = d.Score
	}
	gtm := make([][]bool, T)
	for t := range T {
		e.dtMatched[t] = make([]bool, len(dt))
		e.dtIgnore[t] = make([]bool, len(dt))
		gtm[t] = make([]bool, len(g))
	}
	if len(g) > 0 && len(dt) > 0 {
		for t, thr := range iouThrs {
			for di, d := range dt {
				iou := min(thr, 1-1e-10)
				m := -1
				for gi := range g {
					if gtm[t][gi] && !g[gi].Crowd {
						continue
					}
					if m > -1 && !ig[m] && ig[gi] {
						break
					}
					v := boxIoU(d.Box, g[gi].Box, g[gi].Crowd)
					if v < iou {
						continue
					}
					iou, m = v, gi
				}
				if m == -1 {
					continue
				}
				e.dtIgnore[t][di] = ig[m]
				e.dtMatched[t][di] = true
				gtm[t][m] = true
			}
		}
	}
	for di, d := range dt {
		area := d.Box.W * d.Box.H
		if area < rng[0] || area > rng[1] {
			for t := range T {
				if !e.dtMatched[t][di] {
					e.dtIgnore[t][di] = true
				}
			}
		}
	}
	return e
}

// boxIoU is maskApi.c's bbIou for one pair: against a crowd region the
// union is the detection's own area.
func boxIoU(d, g Box, crowd bool) float64 {
	w := math.Min(d.X+d.W, g.X+g.W) - math.Max(d.X, g.X)
	if w <= 0 {
		return 0
	}
	h := math.Min(d.Y+d.H, g.Y+g.H) - math.Max(d.Y, g.Y)
	if h <= 0 {
		return 0
	}
	i := w * h
	u := d.W*d.H + g.W*g.H - i
	if crowd {
		u = d.W * d.H
	}
	return i / u
}

func unique(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func set(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
