package catalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Docker image repositories by inference engine (§2.1).
const (
	ImageRepoVllm          = "ghcr.io/tenstorrent/tt-inference-server/vllm-tt-metal-src-release-ubuntu-22.04-amd64"
	ImageRepoVllmMultihost = "ghcr.io/tenstorrent/tt-inference-server/vllm-tt-metal-src-multihost-ubuntu-22.04-amd64"
	ImageRepoForge         = "ghcr.io/tenstorrent/tt-media-inference-server-forge"
	ImageRepoMedia         = "ghcr.io/tenstorrent/tt-media-inference-server"
)

// Engine names.
const (
	EngineVllm  = "VLLM"
	EngineMedia = "MEDIA"
	EngineForge = "FORGE"
)

// defaultTensorCacheTimeoutS and defaultImageBenchmarkNumBatches are the
// upstream DeviceModelSpec defaults.
const (
	defaultTensorCacheTimeoutS      = 3600
	defaultImageBenchmarkNumBatches = 3
)

// vllmEngineEnv is set for every vLLM-engine spec before template and device
// variables (media and forge images break with TORCHDYNAMO_DISABLE).
var vllmEngineEnv = map[string]string{
	"VLLM_CONFIGURE_LOGGING": "1",
	"VLLM_RPC_TIMEOUT":       "900000",
	"VLLM_TARGET_DEVICE":     "tt",
	"TORCHDYNAMO_DISABLE":    "1",
}

// whArchYAMLDevices get WH_ARCH_YAML for ethernet dispatch.
var whArchYAMLDevices = []string{"n300", "t3k", "galaxy_t3k"}

var paramCountRE = regexp.MustCompile(`(\d+(?:\.\d+)?)[Bb]`)

// ParamCountB infers the parameter count in billions from an HF repo name:
// the last "<number>B" in it, truncated to an integer ("Qwen/Qwen3-8B" → 8,
// "arcee-ai/AFM-4.5B" → 4). ok is false when the name has none.
func ParamCountB(repo string) (n int, ok bool) {
	m := paramCountRE.FindAllStringSubmatch(repo, -1)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[len(m)-1][1], 64)
	if err != nil {
		return 0, false
	}
	return int(f), true
}

// DefaultMinDiskGB is the upstream disk estimate: 2×P+20 GB (raw weights
// plus a copy), 3×P+20 when the weights are repacked.
func DefaultMinDiskGB(paramB int, repacked bool) int {
	if repacked {
		return 3*paramB + 20
	}
	return 2*paramB + 20
}

// DefaultMinRAMGB is 2.5×P GB: fp16 weights plus half again.
func DefaultMinRAMGB(paramB int) float64 { return 2.5 * float64(paramB) }

// ModelID is "id_<impl name>_<model name>_<device>".
func ModelID(implName, modelName, device string) string {
	return "id_" + implName + "_" + modelName + "_" + device
}

// DefaultPerfTargetsMap is the fraction of the theoretical target each tier
// requires when a template sets none.
func DefaultPerfTargetsMap() map[string]float64 {
	return map[string]float64{TierFunctional: 0.10, TierComplete: 0.50, TierTarget: 1.0}
}

func expand(t rawTemplate, impl implInfo, weight string, ds rawDeviceSpec, dev DeviceType,
	devices map[string]DeviceType, targets map[string]map[string][]rawTarget) (Spec, error) {
	s := Spec{
		ModelName:                path.Base(weight),
		HFRepo:                   weight,
		Device:                   dev.Name,
		ModelType:                t.ModelType,
		Engine:                   t.Engine,
		Impl:                     t.Impl,
		ImplName:                 impl.Name,
		Status:                   t.Status,
		DefaultImpl:              ds.DefaultImpl,
		MaxConcurrency:           ds.MaxConcurrency,
		MaxContext:               ds.MaxContext,
		Version:                  t.Version,
		TTMetalCommit:            t.TTMetalCommit,
		VllmCommit:               t.VllmCommit,
		DockerImage:              t.DockerImage,
		Arch:                     dev.Arch,
		Repacked:                 t.Repacked,
		SupportedModalities:      slices.Clone(t.SupportedModalities),
		HasBuiltinWarmup:         t.HasBuiltinWarmup,
		UsesTensorModelCache:     t.UsesTensorModelCache == nil || *t.UsesTensorModelCache,
		TensorCacheTimeoutS:      ds.TensorCacheTimeout,
		HFWeightsRepo:            t.HFWeightsRepo,
		Metadata:                 maps.Clone(t.Metadata[weight]),
		KnownIssues:              slices.Clone(ds.KnownIssues),
		EvalMaxRetries:           ds.EvalMaxRetries,
		ImageBenchmarkNumBatches: ds.ImageBenchmarkNumBatches,
		OverrideTTConfig:         normalizeNumbers(ds.OverrideTTConfig),
		PerfTargetsMap:           maps.Clone(t.PerfTargetsMap),
	}
	if s.MaxConcurrency <= 0 || s.MaxContext <= 0 {
		return Spec{}, fmt.Errorf("max_concurrency and max_context must be positive")
	}
	switch t.Status {
	case StatusExperimental, StatusFunctional, StatusComplete, StatusTopPerf:
	default:
		return Spec{}, fmt.Errorf("unknown status %q", t.Status)
	}
	s.ModelID = ModelID(impl.Name, s.ModelName, s.Device)
	s.CodeLink = impl.RepoURL + "/tree/" + t.TTMetalCommit + "/" + impl.CodePath
	if s.HFWeightsRepo == "" {
		s.HFWeightsRepo = weight
	}
	if len(s.SupportedModalities) == 0 {
		s.SupportedModalities = []string{"text"}
	}
	if s.TensorCacheTimeoutS == 0 {
		s.TensorCacheTimeoutS = defaultTensorCacheTimeoutS
	}
	if s.ImageBenchmarkNumBatches == 0 {
		s.ImageBenchmarkNumBatches = defaultImageBenchmarkNumBatches
	}
	if s.PerfTargetsMap == nil {
		s.PerfTargetsMap = DefaultPerfTargetsMap()
	}
	s.SystemRequirements = t.SystemRequirements
	if ds.SystemRequirements != nil {
		s.SystemRequirements = ds.SystemRequirements
	}
	if s.SystemRequirements != nil {
		r := *s.SystemRequirements
		s.SystemRequirements = &r
	}

	if p, ok := ParamCountB(weight); ok {
		s.ParamCountB = p
		s.MinDiskGB = DefaultMinDiskGB(p, t.Repacked)
		s.MinRAMGB = DefaultMinRAMGB(p)
	}
	if t.MinDiskGB != nil {
		s.MinDiskGB = *t.MinDiskGB
	}
	if t.MinRAMGB != nil {
		s.MinRAMGB = *t.MinRAMGB
	}

	// Data parallelism splits the device into DP engines.
	dp := 1
	if v, ok := ds.VllmArgs["data_parallel_size"]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 1 || f != float64(int(f)) {
			return Spec{}, fmt.Errorf("data_parallel_size %v is not a positive integer", v)
		}
		dp = int(f)
	}
	s.MaxNumSeqs = s.MaxConcurrency
	s.MaxTokensAllUsers = s.MaxContext
	if dp > 1 {
		s.DataParallel = dp
		s.MaxNumSeqs = s.MaxConcurrency / dp
		s.MaxTokensAllUsers = s.MaxContext * dp
		s.SubDevice, _ = dev.DataParallelSubDevice(dp)
	}
	if dev.Name == "super_cluster" {
		s.MaxTokensAllUsers = s.MaxContext * s.MaxConcurrency
	}
	if ds.MaxTokensAllUsersOverride > 0 {
		s.MaxTokensAllUsers = ds.MaxTokensAllUsersOverride
	}

	s.VllmArgs = map[string]any{
		"model":                  weight,
		"block_size":             64,
		"max_model_len":          s.MaxContext,
		"max_num_seqs":           s.MaxNumSeqs,
		"max_num_batched_tokens": s.MaxContext,
		"max-log-len":            32,
		"seed":                   9472,
	}
	ttcfg := s.OverrideTTConfig
	if ttcfg == nil {
		ttcfg = map[string]any{}
	}
	addl, err := json.Marshal(map[string]any{"tt": ttcfg})
	if err != nil {
		return Spec{}, fmt.Errorf("encode override_tt_config: %w", err)
	}
	s.VllmArgs["additional_config"] = string(addl)
	maps.Copy(s.VllmArgs, normalizeNumbers(ds.VllmArgs))

	s.Env = map[string]string{}
	if t.Engine == EngineVllm {
		maps.Copy(s.Env, vllmEngineEnv)
	}
	maps.Copy(s.Env, t.Env)
	if slices.Contains(whArchYAMLDevices, dev.Name) {
		s.Env["WH_ARCH_YAML"] = "wormhole_b0_80_arch_eth_dispatch.yaml"
	}
	s.Env["MESH_DEVICE"] = dev.Mesh
	if dev.Wormhole() || dev.Blackhole() {
		s.Env["ARCH_NAME"] = dev.Arch
	}
	maps.Copy(s.Env, ds.Env)

	if s.DockerImage == "" && s.Version != "" {
		// A dev template pins no version: it has no image of its own.
		s.DockerImage = defaultDockerImage(s.Engine, dev.Multihost, s.Version, s.TTMetalCommit, s.VllmCommit)
	}

	s.Weights = slices.Clone(t.Weights)
	s.TargetsModel = path.Base(t.Weights[0])
	s.Targets, s.TargetsDevice = specTargets(s.TargetsModel, dev, dp, devices, targets)
	return s, nil
}

// defaultDockerImage builds "<repo>:<version>-<metal[:12]>[-<vllm[:12]>]".
func defaultDockerImage(engine string, multihost bool, version, metal, vllm string) string {
	repo := ImageRepoVllm
	switch {
	case engine == EngineForge:
		repo = ImageRepoForge
	case engine == EngineMedia:
		repo = ImageRepoMedia
	case multihost:
		repo = ImageRepoVllmMultihost
	}
	tag := version + "-" + prefix(metal, 12)
	if vllm != "" {
		tag += "-" + prefix(vllm, 12)
	}
	return repo + ":" + tag
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// specTargets returns the theoretical targets of a model on a device and
// the device whose table they come from. model is the reference key (the
// template's first weight, as run.py keys model_performance_reference.json).
// The device's own table wins: a Galaxy that has one is graded on it (seed
// 003's Llama-3.3-70B galaxy table, 2048/128 included). Without one, a
// data-parallel spec takes the sub-device each replica is equivalent to,
// with total throughput multiplied by the replica count and, for batched
// points, the concurrency too (run.py's get_perf_reference, which uses the
// sub-device even where the device has its own table).
func specTargets(model string, dev DeviceType, dp int, devices map[string]DeviceType, targets map[string]map[string][]rawTarget) ([]PerfTarget, string) {
	perDev := targets[model]
	if perDev == nil {
		return nil, ""
	}
	if own := perDev[dev.Name]; len(own) > 0 {
		out := make([]PerfTarget, 0, len(own))
		for _, r := range own {
			out = append(out, r.target())
		}
		return out, dev.Name
	}
	if dp <= 1 {
		return nil, ""
	}
	sub, ok := dev.DataParallelSubDevice(dp)
	if !ok {
		return nil, ""
	}
	src := devices[sub].Name
	var out []PerfTarget
	for _, r := range perDev[src] {
		pt := r.target()
		pt.Tput *= float64(dp)
		if pt.Concurrency != 1 {
			pt.Concurrency *= dp
		}
		out = append(out, pt)
	}
	if len(out) == 0 {
		return nil, ""
	}
	return out, src
}

// DefaultVllmArgs returns the vLLM arguments of spec: the defaults
// (block_size 64, max_model_len and max_num_batched_tokens = max_context,
// max_num_seqs = max_concurrency / DP, max-log-len 32, seed 9472,
// additional_config = {"tt": override_tt_config}, model = HF repo) overridden
// by the spec's own vllm_args.
func DefaultVllmArgs(spec *Spec) map[string]any { return cloneAny(spec.VllmArgs) }

// Env returns the environment of spec's server, merged low to high: vLLM
// engine defaults, template variables, the inferred MESH_DEVICE, ARCH_NAME
// and WH_ARCH_YAML, then the device's own variables.
func Env(spec *Spec) map[string]string { return maps.Clone(spec.Env) }

// DockerImage returns spec's image: the explicit one, or the engine's
// repository tagged "<version>-<tt_metal_commit[:12]>[-<vllm_commit[:12]>]".
func DockerImage(spec *Spec) string { return spec.DockerImage }

// clone deep-copies a spec so callers cannot change the shared index.
func (s *Spec) clone() Spec {
	c := *s
	c.Env = maps.Clone(s.Env)
	c.OverrideTTConfig = cloneAny(s.OverrideTTConfig)
	c.VllmArgs = cloneAny(s.VllmArgs)
	c.Targets = slices.Clone(s.Targets)
	c.Weights = slices.Clone(s.Weights)
	c.SupportedModalities = slices.Clone(s.SupportedModalities)
	c.PerfTargetsMap = maps.Clone(s.PerfTargetsMap)
	c.Metadata = maps.Clone(s.Metadata)
	c.KnownIssues = slices.Clone(s.KnownIssues)
	if s.SystemRequirements != nil {
		r := *s.SystemRequirements
		c.SystemRequirements = &r
	}
	return c
}

// normalizeNumbers deep-copies a decoded JSON object turning integral
// numbers into ints, so that 52000000 stays an integer for consumers.
func normalizeNumbers(m map[string]any) map[string]any {
	out := cloneAny(m)
	for k, v := range out {
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			out[k] = int(f)
		}
	}
	return out
}

// cloneAny deep-copies JSON-shaped values.
func cloneAny(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneAny(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	default:
		return v
	}
}
