package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// MediaAccuracy is one entry of tt-inference-server's
// reference_config/evals/eval_targets/model_accuracy_reference.json
// (transcribed as data/mediaaccuracy.json): the FID and CLIP-score ranges
// an image model's images, or the CLIP-score range a video model's
// frames, must fall in, by the number of prompts generated.
type MediaAccuracy struct {
	// Key is the reference's key: the model name, with "-512x512" for
	// models its image eval runs at 512×512 (Z-Image-Turbo).
	Key string `json:"key"`
	// Steps is num_inference_steps for a video model (the video eval
	// takes it from here; 0 when the entry has none).
	Steps  int          `json:"num_inference_steps,omitempty"`
	Ranges []MediaRange `json:"ranges"`
}

// MediaRange holds the valid ranges for one prompt count; FID is nil for
// video models, graded by CLIP score alone.
type MediaRange struct {
	Prompts int         `json:"prompts"`
	FID     *[2]float64 `json:"fid,omitempty"`
	CLIP    [2]float64  `json:"clip"`
}

var loadMediaAccuracy = sync.OnceValues(func() ([]MediaAccuracy, error) {
	b, err := dataFS.ReadFile("data/mediaaccuracy.json")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var list []MediaAccuracy
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("decode embedded catalog file mediaaccuracy.json: %w", err)
	}
	for i, m := range list {
		if m.Key == "" || len(m.Ranges) == 0 {
			return nil, fmt.Errorf("mediaaccuracy.json entry %d: key and ranges are required", i)
		}
		for _, r := range m.Ranges {
			if r.Prompts < 1 || r.CLIP[0] > r.CLIP[1] || (r.FID != nil && r.FID[0] > r.FID[1]) {
				return nil, fmt.Errorf("mediaaccuracy.json %s: bad range %+v", m.Key, r)
			}
		}
	}
	return list, nil
})

// MediaAccuracies returns every entry of the media accuracy reference.
func MediaAccuracies() []MediaAccuracy {
	list, err := loadMediaAccuracy()
	if err != nil {
		// The data is embedded and checked by this package's tests.
		panic(fmt.Sprintf("catalog: %v", err))
	}
	out := make([]MediaAccuracy, len(list))
	for i, m := range list {
		m.Ranges = append([]MediaRange(nil), m.Ranges...)
		out[i] = m
	}
	return out
}

// MediaAccuracyKey is the key tt-inference-server looks a model's ranges
// up with: its name, with the resolution suffix of the runners its image
// eval asks at another size than 1024×1024 (image_eval_tests.py passes
// image_resolution (512, 512) for tt-z-image-turbo, and
// image_generation_eval_test.py resolve_model_name appends "-512x512").
func MediaAccuracyKey(model string) string {
	if mediaRunners[model] == "tt-z-image-turbo" {
		return model + "-512x512"
	}
	return model
}

// MediaAccuracyFor returns the ranges of a catalog model (by
// MediaAccuracyKey); ok is false when the reference has none.
func MediaAccuracyFor(model string) (MediaAccuracy, bool) {
	key := MediaAccuracyKey(model)
	for _, m := range MediaAccuracies() {
		if m.Key == key {
			return m, true
		}
	}
	return MediaAccuracy{}, false
}

// Range returns the ranges for a prompt count.
func (m MediaAccuracy) Range(prompts int) (MediaRange, bool) {
	for _, r := range m.Ranges {
		if r.Prompts == prompts {
			return r, true
		}
	}
	return MediaRange{}, false
}
