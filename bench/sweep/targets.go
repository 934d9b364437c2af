package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
)

// targetFileEntry is one point of a targets override file, in the shape of
// tt-inference-server's model_performance_reference.json.
type targetFileEntry struct {
	ISL            int    `json:"isl"`
	OSL            int    `json:"osl"`
	MaxConcurrency int    `json:"max_concurrency"`
	NumPrompts     int    `json:"num_prompts,omitempty"`
	TaskType       string `json:"task_type,omitempty"`
	Targets        struct {
		Theoretical *struct {
			TTFTms   *float64 `json:"ttft_ms"`
			TputUser *float64 `json:"tput_user"`
			Tput     *float64 `json:"tput"`
		} `json:"theoretical"`
	} `json:"targets"`
}

// ParseTargets reads a targets override file: a JSON object
// model → device → list of {isl, osl, max_concurrency,
// targets: {theoretical: {ttft_ms, tput_user, tput}}}, and returns the
// points for (model, device). Model and device match case-insensitively;
// the model may be given as a bare name or an HF repo. found is false when
// the file has no entry for the pair.
func ParseTargets(r io.Reader, name, model, device string) (targets []catalog.PerfTarget, found bool, err error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	var file map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, false, fmt.Errorf("%s: want {model: {device: [points]}}: %w", name, err)
	}
	base := model
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	for m, devs := range file {
		if !strings.EqualFold(m, model) && !strings.EqualFold(m, base) {
			continue
		}
		for d, raw := range devs {
			if !strings.EqualFold(d, device) {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			var entries []targetFileEntry
			if err := dec.Decode(&entries); err != nil {
				return nil, false, fmt.Errorf("%s: %s/%s: %w", name, m, d, err)
			}
			for i, e := range entries {
				where := fmt.Sprintf("%s: %s/%s[%d]", name, m, d, i)
				if e.ISL < 1 || e.OSL < 1 {
					return nil, false, fmt.Errorf("%s: isl and osl must be positive", where)
				}
				if e.MaxConcurrency < 0 {
					return nil, false, fmt.Errorf("%s: max_concurrency is negative", where)
				}
				t := catalog.PerfTarget{ISL: e.ISL, OSL: e.OSL, Concurrency: max(e.MaxConcurrency, 1), Task: e.TaskType}
				if th := e.Targets.Theoretical; th != nil {
					for _, f := range []struct {
						name string
						src  *float64
						dst  *float64
					}{{"ttft_ms", th.TTFTms, &t.TTFTms}, {"tput_user", th.TputUser, &t.TputUser}, {"tput", th.Tput, &t.Tput}} {
						if f.src == nil {
							continue
						}
						if *f.src < 0 {
							return nil, false, fmt.Errorf("%s: targets.theoretical.%s is negative", where, f.name)
						}
						*f.dst = *f.src
					}
				}
				targets = append(targets, t)
			}
			return targets, true, nil
		}
	}
	return nil, false, nil
}
