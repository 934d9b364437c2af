// Package catalog is the embedded model catalog: which models run on which
// Tenstorrent device types, with what limits, pins and performance targets.
// It is transcribed from tt-inference-server's prod model specs and
// performance reference (see ../../shared/reference/tt-inference-server.md §2-§4).
package catalog

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
}

// PerfTarget is one theoretical performance point from the reference.
type PerfTarget struct {
	ISL         int `json:"isl"`
	OSL         int `json:"osl"`
	Concurrency int `json:"concurrency"`
	// TTFTms is time to first token in milliseconds (0 = not given).
	TTFTms float64 `json:"ttft_ms"`
	// TputUser is decode tokens/s per user (0 = not given).
	TputUser float64 `json:"tput_user"`
	// Tput is total tokens/s across users (0 = not given).
	Tput float64 `json:"tput"`
}
