package catalog

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
)

// The catalog is data, not code: data/*.json are transcribed from
// tt-inference-server's prod model specs (templates.json, §2.3/§2.4), its
// DeviceTypes (devices.json, §2.2), the media server's ModelConfigs
// (media.json, §2.6) and model_performance_reference.json (targets.json,
// §3.6). They are decoded strictly so that a typo in a data file fails the
// package's tests instead of silently dropping a field.
//
// data/dev/templates.json is the development catalog, transcribed with the
// same field mapping from workflows/model_specs/dev/*.yaml (tt-inference-
// server 11ac526e0, what run.py --dev-mode loads: run.py lines 9-14,
// model_spec.py lines 1216-1242); data/dev/impls.json adds the
// implementations only dev specs use (model_spec.py lines 286-340). Dev
// templates pin no image version: a dev unit names its image, as run.py
// requires --override-docker-image with --dev-mode (run.py lines 811-816).
//
//go:embed data/*.json data/dev/*.json
var dataFS embed.FS

// rawTemplate is one entry of templates.json: a list of weights sharing an
// implementation and a list of per-device settings.
type rawTemplate struct {
	Weights              []string                     `json:"weights"`
	ModelType            string                       `json:"model_type"`
	Engine               string                       `json:"engine"`
	Impl                 string                       `json:"impl"`
	Status               string                       `json:"status"`
	MinDiskGB            *int                         `json:"min_disk_gb"`
	MinRAMGB             *float64                     `json:"min_ram_gb"`
	Repacked             bool                         `json:"repacked"`
	Version              string                       `json:"version"`
	TTMetalCommit        string                       `json:"tt_metal_commit"`
	VllmCommit           string                       `json:"vllm_commit"`
	DockerImage          string                       `json:"docker_image"`
	Env                  map[string]string            `json:"env"`
	SupportedModalities  []string                     `json:"supported_modalities"`
	HasBuiltinWarmup     bool                         `json:"has_builtin_warmup"`
	HFWeightsRepo        string                       `json:"hf_weights_repo"`
	UsesTensorModelCache *bool                        `json:"uses_tensor_model_cache"`
	Metadata             map[string]map[string]string `json:"metadata"`
	SystemRequirements   *SystemRequirements          `json:"system_requirements"`
	PerfTargetsMap       map[string]float64           `json:"perf_targets_map"`
	Devices              []rawDeviceSpec              `json:"devices"`
}

// rawDeviceSpec is one device entry of a template.
type rawDeviceSpec struct {
	Device                    string              `json:"device"`
	MaxConcurrency            int                 `json:"max_concurrency"`
	MaxContext                int                 `json:"max_context"`
	DefaultImpl               bool                `json:"default_impl"`
	MaxTokensAllUsersOverride int                 `json:"max_tokens_all_users_override"`
	Env                       map[string]string   `json:"env"`
	OverrideTTConfig          map[string]any      `json:"override_tt_config"`
	VllmArgs                  map[string]any      `json:"vllm_args"`
	TensorCacheTimeout        float64             `json:"tensor_cache_timeout"`
	KnownIssues               []KnownIssue        `json:"known_issues"`
	SystemRequirements        *SystemRequirements `json:"system_requirements"`
	EvalMaxRetries            int                 `json:"eval_max_retries"`
	ImageBenchmarkNumBatches  int                 `json:"image_benchmark_num_batches"`
}

// rawTarget is one theoretical target of targets.json.
type rawTarget struct {
	Task                    string  `json:"task"`
	ISL                     int     `json:"isl"`
	OSL                     int     `json:"osl"`
	Concurrency             int     `json:"concurrency"`
	NumPrompts              int     `json:"num_prompts"`
	Image                   string  `json:"image"`
	Steps                   int     `json:"steps"`
	TTFTms                  float64 `json:"ttft_ms"`
	TputUser                float64 `json:"tput_user"`
	Tput                    float64 `json:"tput"`
	TTFTStreamingMs         float64 `json:"ttft_streaming_ms"`
	RTR                     float64 `json:"rtr"`
	TputPrefill             float64 `json:"tput_prefill"`
	E2ELms                  float64 `json:"e2el_ms"`
	EndToEndLatencyMs       float64 `json:"end_to_end_latency_ms"`
	InferenceStepsPerSecond float64 `json:"inference_steps_per_second"`
	Tolerance               float64 `json:"tolerance"`
}

func (r rawTarget) target() PerfTarget {
	return PerfTarget{
		ISL: r.ISL, OSL: r.OSL, Concurrency: r.Concurrency, NumPrompts: r.NumPrompts,
		TTFTms: r.TTFTms, TputUser: r.TputUser, Tput: r.Tput,
		Task: r.Task, Image: r.Image, Steps: r.Steps,
		TTFTStreamingMs: r.TTFTStreamingMs, RTR: r.RTR, TputPrefill: r.TputPrefill,
		E2ELms: r.E2ELms, EndToEndLatencyMs: r.EndToEndLatencyMs,
		InferenceStepsPerSecond: r.InferenceStepsPerSecond, Tolerance: r.Tolerance,
	}
}

// implInfo names an implementation and where its code lives.
type implInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	RepoURL  string `json:"repo_url"`
	CodePath string `json:"code_path"`
}

// rawData is every embedded file, decoded.
type rawData struct {
	devices   []DeviceType
	templates []rawTemplate
	targets   map[string]map[string][]rawTarget
	media     []MediaConfig
	impls     []implInfo
}

func decodeStrict(name string, v any) error {
	b, err := dataFS.ReadFile("data/" + name)
	if err != nil {
		return fmt.Errorf("read embedded catalog file %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode embedded catalog file %s: %w", name, err)
	}
	return nil
}

// readDevData is readData with the development templates, and the
// implementations they add.
func readDevData() (*rawData, error) {
	d, err := readData()
	if err != nil {
		return nil, err
	}
	d.templates = nil
	var extra []implInfo
	for name, v := range map[string]any{"dev/templates.json": &d.templates, "dev/impls.json": &extra} {
		if err := decodeStrict(name, v); err != nil {
			return nil, err
		}
	}
	d.impls = append(d.impls, extra...)
	return d, nil
}

func readData() (*rawData, error) {
	var d rawData
	for name, v := range map[string]any{
		"devices.json":   &d.devices,
		"templates.json": &d.templates,
		"targets.json":   &d.targets,
		"media.json":     &d.media,
		"impls.json":     &d.impls,
	} {
		if err := decodeStrict(name, v); err != nil {
			return nil, err
		}
	}
	return &d, nil
}
