package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
)

// targetFileEntry is one point of a targets override file, in the shape of
// tt-inference-server's model_performance_reference.json: every field its
// entries use, so that a copy of that file reads as run.py reads it.
type targetFileEntry struct {
	ISL               int    `json:"isl"`
	OSL               int    `json:"osl"`
	MaxConcurrency    int    `json:"max_concurrency"`
	NumPrompts        int    `json:"num_prompts"`
	TaskType          string `json:"task_type"`
	ImageHeight       int    `json:"image_height"`
	ImageWidth        int    `json:"image_width"`
	ImagesPerPrompt   int    `json:"images_per_prompt"`
	NumInferenceSteps int    `json:"num_inference_steps"`
	NumEvalRuns       int    `json:"num_eval_runs"`
	Targets           struct {
		Theoretical *theoretical `json:"theoretical"`
	} `json:"targets"`
}

// theoretical is a point's "theoretical" targets.
type theoretical struct {
	TTFTms                  *float64 `json:"ttft_ms"`
	TputUser                *float64 `json:"tput_user"`
	Tput                    *float64 `json:"tput"`
	TTFTStreamingMs         *float64 `json:"ttft_streaming_ms"`
	RTR                     *float64 `json:"rtr"`
	TputPrefill             *float64 `json:"tput_prefill"`
	E2ELms                  *float64 `json:"e2el_ms"`
	EndToEndLatencyMs       *float64 `json:"end_to_end_latency_ms"`
	InferenceStepsPerSecond *float64 `json:"inference_steps_per_second"`
	Tolerance               *float64 `json:"tolerance"`
}

// ParseTargets reads a targets override file: a JSON object
// model → device → list of {isl, osl, max_concurrency, num_prompts,
// targets: {theoretical: {ttft_ms, tput_user, tput}}}, and returns the
// points for device under the first of keys the file has (keys in order of
// preference: catalog.TargetKeys). Keys and device match
// case-insensitively. A point's num_prompts is kept as given (run.py runs
// a reference point with its own count). found is false when the file has
// no entry for any key on device; key is the one read.
func ParseTargets(r io.Reader, name string, keys []string, device string) (targets []catalog.PerfTarget, key string, found bool, err error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTargetsFile+1))
	if err != nil {
		return nil, "", false, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxTargetsFile {
		return nil, "", false, fmt.Errorf("%s: larger than %d MiB", name, maxTargetsFile>>20)
	}
	var file map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, "", false, fmt.Errorf("%s: want {model: {device: [points]}}: %w", name, err)
	}
	for _, want := range keys {
		for m, devs := range file {
			if !strings.EqualFold(m, want) {
				continue
			}
			for d, raw := range devs {
				if !strings.EqualFold(d, device) {
					continue
				}
				ts, err := parseEntries(raw, fmt.Sprintf("%s: %s/%s", name, m, d))
				if err != nil {
					return nil, "", false, err
				}
				return ts, m, true, nil
			}
		}
	}
	return nil, "", false, nil
}

// maxTargetsFile bounds a targets file read into memory.
const maxTargetsFile = 64 << 20

// parseEntries reads one device's list of points; where names it in errors.
func parseEntries(raw json.RawMessage, where string) ([]catalog.PerfTarget, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var entries []targetFileEntry
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var targets []catalog.PerfTarget
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", where, i)
		task := e.TaskType
		if task == "" {
			task = "text"
		}
		text := task == "text" || task == "vlm"
		if text && (e.ISL < 1 || e.OSL < 1) {
			return nil, fmt.Errorf("%s: isl and osl must be positive", at)
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"isl", e.ISL}, {"osl", e.OSL}, {"max_concurrency", e.MaxConcurrency}, {"num_prompts", e.NumPrompts},
			{"image_height", e.ImageHeight}, {"image_width", e.ImageWidth}, {"num_inference_steps", e.NumInferenceSteps}} {
			if f.v < 0 {
				return nil, fmt.Errorf("%s: %s is negative", at, f.name)
			}
		}
		t := catalog.PerfTarget{ISL: e.ISL, OSL: e.OSL, Concurrency: max(e.MaxConcurrency, 1), NumPrompts: e.NumPrompts,
			Task: task, Steps: e.NumInferenceSteps}
		if e.ImageHeight > 0 || e.ImageWidth > 0 {
			t.Image = fmt.Sprintf("%dx%d", e.ImageWidth, e.ImageHeight)
		}
		if th := e.Targets.Theoretical; th != nil {
			for _, f := range []struct {
				name string
				src  *float64
				dst  *float64
			}{{"ttft_ms", th.TTFTms, &t.TTFTms}, {"tput_user", th.TputUser, &t.TputUser}, {"tput", th.Tput, &t.Tput},
				{"ttft_streaming_ms", th.TTFTStreamingMs, &t.TTFTStreamingMs}, {"rtr", th.RTR, &t.RTR},
				{"tput_prefill", th.TputPrefill, &t.TputPrefill}, {"e2el_ms", th.E2ELms, &t.E2ELms},
				{"end_to_end_latency_ms", th.EndToEndLatencyMs, &t.EndToEndLatencyMs},
				{"inference_steps_per_second", th.InferenceStepsPerSecond, &t.InferenceStepsPerSecond},
				{"tolerance", th.Tolerance, &t.Tolerance}} {
				if f.src == nil {
					continue
				}
				if *f.src < 0 || math.IsNaN(*f.src) || math.IsInf(*f.src, 0) {
					return nil, fmt.Errorf("%s: targets.theoretical.%s is %v: want a finite number, 0 or more", at, f.name, *f.src)
				}
				*f.dst = *f.src
			}
		}
		targets = append(targets, t)
	}
	return targets, nil
}
