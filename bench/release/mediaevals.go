package release

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The figures of image and video evals (load_image, load_video): FID,
// CLIP score and its spread, top-1, mAP, the prompts measured, the
// reference's ranges, and the conditions the numbers hold under (the
// weights' revisions, the reference files, the request settings), shown
// beside the eval table.

// mediaFigureColumns are the figures table's columns.
var mediaFigureColumns = []struct {
	header string
	cell   func(r *EvalRow) string
}{
	{"Task", func(r *EvalRow) string { return r.Task }},
	{"Variant", func(r *EvalRow) string { return r.Media.Variant }},
	{"Measured / Asked", func(r *EvalRow) string { return fmt.Sprintf("%d / %d", r.Media.Measured, r.Media.Asked) }},
	{"FID", func(r *EvalRow) string { return num(r.Media.FID, 2) }},
	{"FID Range", func(r *EvalRow) string { return rangeCell(r.Media.FIDRange) }},
	{"CLIP Score", func(r *EvalRow) string { return num(r.Media.CLIP, 3) }},
	{"CLIP Stdev", func(r *EvalRow) string { return num(r.Media.CLIPStdev, 3) }},
	{"CLIP Min–Max", func(r *EvalRow) string {
		if r.Media.CLIPMin == nil || r.Media.CLIPMax == nil {
			return ""
		}
		return num(r.Media.CLIPMin, 2) + "–" + num(r.Media.CLIPMax, 2)
	}},
	{"CLIP Range", func(r *EvalRow) string { return rangeCell(r.Media.CLIPRange) }},
	{"Top-1 %", func(r *EvalRow) string { return num(r.Media.Top1, 1) }},
	{"mAP %", func(r *EvalRow) string { return num(r.Media.MAP, 2) }},
	{"Published", func(r *EvalRow) string {
		// The catalog's number is a published top-1 or mAP; for the
		// generators it is no score of theirs.
		if r.Media.Top1 == nil && r.Media.MAP == nil {
			return ""
		}
		return num(r.Published, 2)
	}},
	{"Accuracy Check", func(r *EvalRow) string { return evalVerdict(r) }},
}

func rangeCell(r *[2]float64) string {
	if r == nil {
		return ""
	}
	return strconv.FormatFloat(r[0], 'f', -1, 64) + " – " + strconv.FormatFloat(r[1], 'f', -1, 64)
}

// mediaRows are the eval rows with media figures.
func mediaRows(rows []EvalRow) []*EvalRow {
	var out []*EvalRow
	for i := range rows {
		if rows[i].Media != nil {
			out = append(out, &rows[i])
		}
	}
	return out
}

// mediaConditions are a row's conditions as "name: value" lines, sorted.
func mediaConditions(r *EvalRow) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r.Media.Conditions)) {
		v := r.Media.Conditions[k]
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		out = append(out, strings.ReplaceAll(k, "_", " ")+": "+s)
	}
	return out
}

// mediaMarkdown is the figures section of report.md ("" without media
// rows).
func mediaMarkdown(e *EvalSection, simulated bool) string {
	rows := mediaRows(e.Rows)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("#### Image and Video Figures\n\n")
	if simulated {
		b.WriteString("**SIMULATED**: the images and videos come from the sim runtime (drawn shapes, not a model); their scores are computed, not assumed, and say nothing about a real model.\n\n")
	}
	var head, sep []string
	for _, c := range mediaFigureColumns {
		head, sep = append(head, c.header), append(sep, "---")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Join(sep, "|") + "|\n")
	for _, r := range rows {
		var cells []string
		for _, c := range mediaFigureColumns {
			cells = append(cells, cell(c.cell(r)))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nFID is against the reference statistics, the CLIP score 100 × the cosine of CLIP ViT-B/32's image and prompt embeddings (per image; per video, the mean over every 8th frame); ranges are model_accuracy_reference.json's for the prompt count.\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "Conditions of %s (%s):\n\n", r.Task, r.Media.Variant)
		for _, c := range mediaConditions(r) {
			fmt.Fprintf(&b, "- %s\n", cell(c))
		}
		if r.Basis != "" {
			fmt.Fprintf(&b, "- grade: %s\n", cell(r.Basis))
		}
		if r.Media.NotMeasured != "" {
			fmt.Fprintf(&b, "- not measured: %s\n", cell(r.Media.NotMeasured))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mediaHTML is the figures table of report.html and each row's
// conditions (nil without media rows).
func mediaHTML(e *EvalSection) (*htmlTable, []htmlKeyed) {
	rows := mediaRows(e.Rows)
	if len(rows) == 0 {
		return nil, nil
	}
	t := &htmlTable{}
	for _, c := range mediaFigureColumns {
		t.Header = append(t.Header, c.header)
	}
	var lists []htmlKeyed
	for _, r := range rows {
		var row []string
		for _, c := range mediaFigureColumns {
			row = append(row, c.cell(r))
		}
		t.Rows = append(t.Rows, row)
		l := htmlKeyed{Title: "Conditions of " + r.Task + " (" + r.Media.Variant + ")"}
		for _, c := range mediaConditions(r) {
			k, v, _ := strings.Cut(c, ": ")
			l.Items = append(l.Items, Blocker{Key: k, Message: v})
		}
		if r.Basis != "" {
			l.Items = append(l.Items, Blocker{Key: "grade", Message: r.Basis})
		}
		if r.Media.NotMeasured != "" {
			l.Items = append(l.Items, Blocker{Key: "not measured", Message: r.Media.NotMeasured})
		}
		lists = append(lists, l)
	}
	return t, lists
}

// mediaFailure says why a media row failed its grade, in its own terms.
func mediaFailure(r *EvalRow) string {
	m := r.Media
	var parts []string
	if m.FID != nil && m.FIDRange != nil {
		parts = append(parts, fmt.Sprintf("FID %.2f (range %s)", *m.FID, rangeCell(m.FIDRange)))
	}
	if m.CLIP != nil && m.CLIPRange != nil {
		parts = append(parts, fmt.Sprintf("CLIP score %.3f (range %s)", *m.CLIP, rangeCell(m.CLIPRange)))
	}
	if m.Top1 != nil && r.Published != nil {
		parts = append(parts, fmt.Sprintf("top-1 %.1f%% against the published %.4g%%", *m.Top1, *r.Published))
	}
	if m.MAP != nil && r.Published != nil {
		parts = append(parts, fmt.Sprintf("mAP %.2f%% against the published %.4g%%", *m.MAP, *r.Published))
	}
	if len(parts) == 0 {
		return r.Basis
	}
	return strings.Join(parts, ", ") + "; required: " + r.Basis
}

// htmlKeyed is a titled list of key: message lines (a media row's
// conditions), which, unlike the blocker lists, has nothing to group.
type htmlKeyed struct {
	Title string
	Items []Blocker
}
