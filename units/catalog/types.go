// Package catalog is the embedded model catalog: which models run on which
// Tenstorrent device types, with what limits, pins and performance targets.
// It is transcribed from tt-inference-server's prod model specs and
// performance reference (see ../../shared/reference/tt-inference-server.md §2-§4).
package catalog

import "regexp"

// Spec is one (model weights, device type) entry, with every derived value
// filled in.
type Spec struct {
	// ModelName is the basename of the HF repo ("Llama-3.1-8B-Instruct").
	ModelName string `json:"model_name"`
	// HFRepo is the Hugging Face repo ("meta-llama/Llama-3.1-8B-Instruct").
	HFRepo string `json:"hf_repo"`
	// ModelID is "id_<impl>_<model_name>_<device>".
	ModelID string `json:"model_id"`
	// Device is the lower-case device type ("n300").
	Device string `json:"device"`
	// ModelType is LLM, VLM, CNN, AUDIO, IMAGE, EMBEDDING, TEXT_TO_SPEECH or VIDEO.
	ModelType string `json:"model_type"`
	// Engine is VLLM, MEDIA or FORGE.
	Engine string `json:"engine"`
	// Impl is the implementation id ("tt_transformers").
	Impl string `json:"impl"`
	// Catalog is "dev" for a spec of the development catalog (LookupIn
	// ModeDev) and empty for a prod one; CatalogMode names either.
	Catalog string `json:"catalog,omitempty"`
	// Status is EXPERIMENTAL, FUNCTIONAL, COMPLETE or TOP_PERF.
	Status         string `json:"status"`
	DefaultImpl    bool   `json:"default_impl"`
	MaxConcurrency int    `json:"max_concurrency"`
	MaxContext     int    `json:"max_context"`
	// MaxTokensAllUsers is the KV budget across users (derived).
	MaxTokensAllUsers int               `json:"max_tokens_all_users"`
	DataParallel      int               `json:"data_parallel,omitempty"`
	ParamCountB       int               `json:"param_count_b,omitempty"`
	MinDiskGB         int               `json:"min_disk_gb,omitempty"`
	MinRAMGB          float64           `json:"min_ram_gb,omitempty"`
	Version           string            `json:"version,omitempty"`
	TTMetalCommit     string            `json:"tt_metal_commit,omitempty"`
	VllmCommit        string            `json:"vllm_commit,omitempty"`
	DockerImage       string            `json:"docker_image,omitempty"`
	Env               map[string]string `json:"env,omitempty"`
	OverrideTTConfig  map[string]any    `json:"override_tt_config,omitempty"`
	VllmArgs          map[string]any    `json:"vllm_args,omitempty"`
	// Targets are the theoretical performance targets for this (model,
	// device); tiers are derived from them (see Tiers).
	Targets []PerfTarget `json:"targets,omitempty"`
	// TargetsModel is the model_performance_reference key the targets are
	// read under: the template's first weight, shared by every weight of
	// the template, as run.py keys them.
	TargetsModel string `json:"targets_model,omitempty"`
	// TargetsDevice is the device whose table the targets come from: the
	// spec's own device when the reference has a table for it, else the
	// data-parallel sub-device's (throughput scaled); empty without
	// targets.
	TargetsDevice string `json:"targets_device,omitempty"`
	// Weights are the template's weights (HF repos), the first naming the
	// performance reference.
	Weights []string `json:"weights,omitempty"`

	// ImplName is the implementation's display name ("tt-transformers"),
	// the form used inside ModelID.
	ImplName string `json:"impl_name,omitempty"`
	// CodeLink points at the implementation's source at TTMetalCommit.
	CodeLink string `json:"code_link,omitempty"`
	// HFWeightsRepo is where the weights are downloaded from (defaults to
	// HFRepo).
	HFWeightsRepo string `json:"hf_weights_repo,omitempty"`
	// Arch is the device architecture ("wormhole_b0", "blackhole").
	Arch string `json:"arch,omitempty"`
	// SubDevice is the device whose targets a data-parallel spec inherits.
	SubDevice string `json:"subdevice,omitempty"`
	// MaxNumSeqs is the per-engine batch size (MaxConcurrency / DataParallel).
	MaxNumSeqs          int      `json:"max_num_seqs,omitempty"`
	Repacked            bool     `json:"repacked,omitempty"`
	SupportedModalities []string `json:"supported_modalities,omitempty"`
	HasBuiltinWarmup    bool     `json:"has_builtin_warmup,omitempty"`
	// UsesTensorModelCache is false for specs that compile no tensor cache.
	UsesTensorModelCache bool `json:"uses_tensor_model_cache"`
	// TensorCacheTimeoutS bounds the first start's cache build (default 3600).
	TensorCacheTimeoutS float64 `json:"tensor_cache_timeout_s,omitempty"`
	// PerfTargetsMap maps tier name to the fraction of the theoretical
	// target it requires.
	PerfTargetsMap map[string]float64 `json:"perf_targets_map,omitempty"`
	// Metadata holds per-weight parser names (reasoning_parser_name,
	// tool_call_parser_name).
	Metadata           map[string]string   `json:"metadata,omitempty"`
	SystemRequirements *SystemRequirements `json:"system_requirements,omitempty"`
	// KnownIssues are acceptance waivers for this spec.
	KnownIssues    []KnownIssue `json:"known_issues,omitempty"`
	EvalMaxRetries int          `json:"eval_max_retries,omitempty"`
	// ImageBenchmarkNumBatches scales SDXL-family benchmark calls (default 3).
	ImageBenchmarkNumBatches int `json:"image_benchmark_num_batches,omitempty"`
}

// CatalogMode is the catalog the spec comes from: ModeProd or ModeDev.
func (s *Spec) CatalogMode() string {
	if s.Catalog == ModeDev {
		return ModeDev
	}
	return ModeProd
}

// SystemRequirements are minimum firmware and kernel-driver versions
// (PEP 440 specifiers such as ">=18.6.0").
type SystemRequirements struct {
	Firmware string `json:"firmware,omitempty"`
	KMD      string `json:"kmd,omitempty"`
}

// KnownIssue waives an acceptance failure of one workflow (and optionally
// one task of it).
type KnownIssue struct {
	Workflow string `json:"workflow"`
	Task     string `json:"task,omitempty"`
	// Reason is tt-inference-server's text for the waiver (KnownIssue.reason,
	// such as "GH#2600 - OOM on T3K"); empty where the transcription has
	// none.
	Reason string `json:"reason,omitempty"`
}

// Scope names what the issue waives: "EVALS aime25", or the workflow alone.
func (k KnownIssue) Scope() string {
	if k.Task == "" {
		return k.Workflow + " (every task)"
	}
	return k.Workflow + " " + k.Task
}

// ghIssueRE finds tt-inference-server's "GH#1234" references in a reason.
var ghIssueRE = regexp.MustCompile(`\bGH#(\d+)\b`)

// urlRE finds a link written out in a reason.
var urlRE = regexp.MustCompile(`https?://[^\s)]+`)

// Link is where the issue is tracked: a URL in the reason, or the
// tt-inference-server issue a "GH#N" names; empty when the reason names
// neither.
func (k KnownIssue) Link() string {
	if u := urlRE.FindString(k.Reason); u != "" {
		return u
	}
	if m := ghIssueRE.FindStringSubmatch(k.Reason); m != nil {
		return "https://github.com/tenstorrent/tt-inference-server/issues/" + m[1]
	}
	return ""
}

// PerfTarget is one theoretical performance point from the reference.
type PerfTarget struct {
	ISL         int `json:"isl"`
	OSL         int `json:"osl"`
	Concurrency int `json:"concurrency"`
	// NumPrompts is the reference's prompt count for the point (0: not
	// given, the sweep's rule applies). run.py runs a reference point with
	// the count it gives, not the rule's.
	NumPrompts int `json:"num_prompts,omitempty"`
	// TTFTms is time to first token in milliseconds (0 = not given).
	TTFTms float64 `json:"ttft_ms"`
	// TputUser is decode tokens/s per user (0 = not given).
	TputUser float64 `json:"tput_user"`
	// Tput is total tokens/s across users (0 = not given).
	Tput float64 `json:"tput"`

	// Task is the reference's task type: text, vlm, image, asr, video, cnn,
	// embedding or tts.
	Task string `json:"task,omitempty"`
	// Image is the input image size of VLM targets ("512x512").
	Image string `json:"image,omitempty"`
	// Steps is the number of inference steps of media targets.
	Steps int `json:"steps,omitempty"`
	// Media extras (0 = not given).
	TTFTStreamingMs         float64 `json:"ttft_streaming_ms,omitempty"`
	RTR                     float64 `json:"rtr,omitempty"`
	TputPrefill             float64 `json:"tput_prefill,omitempty"`
	E2ELms                  float64 `json:"e2el_ms,omitempty"`
	EndToEndLatencyMs       float64 `json:"end_to_end_latency_ms,omitempty"`
	InferenceStepsPerSecond float64 `json:"inference_steps_per_second,omitempty"`
	// Tolerance is the relative slack of a check (0 for LLM tiers).
	Tolerance float64 `json:"tolerance,omitempty"`
}
