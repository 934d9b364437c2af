package catalog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestTranscriptionCounts pins the size of the transcribed reference: 75 prod
// templates expanding to 225 specs (§2.1), 92 model keys of theoretical
// targets (§3.4), the §2.2 device table and the §2.6 media runner rows.
func TestTranscriptionCounts(t *testing.T) {
	raw, err := readData()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(raw.templates); n != 75 {
		t.Errorf("%d templates, want 75", n)
	}
	if n := len(Specs()); n != 225 {
		t.Errorf("%d specs, want 225", n)
	}
	if n := len(raw.targets); n != 92 {
		t.Errorf("%d target model keys, want 92", n)
	}
	if n := len(DeviceTypes()); n != 19 {
		t.Errorf("%d device types, want 19", n)
	}
	if n := len(MediaConfigs()); n != 144 {
		t.Errorf("%d media rows, want 144", n)
	}
	ids := map[string]bool{}
	for _, s := range Specs() {
		if ids[s.ModelID] {
			t.Errorf("duplicate model id %s", s.ModelID)
		}
		ids[s.ModelID] = true
		if _, err := Device(s.Device); err != nil {
			t.Errorf("%s: %v", s.ModelID, err)
		}
	}
}

func TestLookupLlama8B(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n300")
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxConcurrency != 32 || s.MaxContext != 131072 || s.Status != StatusComplete {
		t.Fatalf("got conc %d ctx %d status %s", s.MaxConcurrency, s.MaxContext, s.Status)
	}
	// The template's first weight (Llama-3.1-8B) keys the targets of all
	// its weights, as in run.py.
	if len(s.Targets) != 1 || s.Targets[0].TTFTms != 58 || s.Targets[0].TputUser != 42 || s.Targets[0].Tput != 0 || s.Targets[0].Concurrency != 1 || s.Targets[0].ISL != 128 || s.Targets[0].NumPrompts != 8 {
		t.Fatalf("targets %+v", s.Targets)
	}
	want := map[string]any{
		"ModelID":     "id_tt-transformers_Llama-3.1-8B-Instruct_n300",
		"HFRepo":      "meta-llama/Llama-3.1-8B-Instruct",
		"ParamCountB": 8,
		"MinDiskGB":   36,
		"MinRAMGB":    20.0,
		"DockerImage": ImageRepoVllm + ":0.9.0-25305db-6e67d2d",
		"CodeLink":    "https://github.com/tenstorrent/tt-metal/tree/25305db/models/tt_transformers",
		"MaxNumSeqs":  32,
	}
	checkFields(t, s, want)
	if s.OverrideTTConfig["trace_region_size"] != 70000000 {
		t.Errorf("override_tt_config %v", s.OverrideTTConfig)
	}
	env := Env(s)
	for k, v := range map[string]string{"MESH_DEVICE": "N300", "ARCH_NAME": "wormhole_b0", "WH_ARCH_YAML": "wormhole_b0_80_arch_eth_dispatch.yaml", "VLLM_TARGET_DEVICE": "tt", "VLLM_RPC_TIMEOUT": "900000", "TORCHDYNAMO_DISABLE": "1"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	args := DefaultVllmArgs(s)
	if args["max_model_len"] != 131072 || args["max_num_seqs"] != 32 || args["block_size"] != 64 || args["seed"] != 9472 || args["model"] != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("vllm args %v", args)
	}
	if args["additional_config"] != `{"tt":{"trace_region_size":70000000}}` {
		t.Errorf("additional_config %v", args["additional_config"])
	}
}

func checkFields(t *testing.T, s *Spec, want map[string]any) {
	t.Helper()
	v := reflect.ValueOf(*s)
	for name, w := range want {
		got := v.FieldByName(name).Interface()
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %s = %v, want %v", s.ModelID, name, got, w)
		}
	}
}

func TestSpotChecks(t *testing.T) {
	tests := []struct {
		model, device string
		want          map[string]any
	}{
		{"Qwen/Qwen3-8B", "n150", map[string]any{"MaxContext": 40960, "Status": StatusFunctional, "TTMetalCommit": "e0e0500"}},
		{"Qwen3-8B", "p300", map[string]any{"TTMetalCommit": "e867533", "SystemRequirements": &SystemRequirements{Firmware: ">=19.2.0", KMD: ">=2.5.0"}}},
		// Data parallel, but the reference has a galaxy table: that grades it.
		{"gpt-oss-20b", "galaxy", map[string]any{"DataParallel": 4, "MaxNumSeqs": 32, "MaxTokensAllUsers": 131072 * 4, "SubDevice": "t3k", "TargetsDevice": "galaxy",
			"Targets": []PerfTarget{{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, TTFTms: 9, TputUser: 507, Tput: 17102, Task: "text"}}}},
		{"Qwen3.6-27B", "p300x2", map[string]any{"MaxTokensAllUsers": 525312, "ImplName": "qwen36-blackhole", "HasBuiltinWarmup": true}},
		{"DeepSeek-R1-0528", "dual_galaxy", map[string]any{"MinDiskGB": 0, "DataParallel": 8, "DockerImage": ImageRepoVllmMultihost + ":0.12.0-805f43d-a45c614"}},
		{"Qwen3-32B", "galaxy", map[string]any{"Impl": "qwen3_32b_galaxy", "DefaultImpl": true, "Status": StatusComplete}},
		{"Llama-3.2-3B", "n150", map[string]any{"Impl": "tt_transformers", "MinDiskGB": 26, "MinRAMGB": 7.5}},
		{"diffusers/stable-diffusion-xl-1.0-inpainting-0.1", "galaxy", map[string]any{"MaxConcurrency": 32, "Engine": EngineMedia, "MinDiskGB": 15, "DockerImage": "ghcr.io/tenstorrent/tt-media-inference-server:0.5.0-fbbbd2da8cfab49ddf43d28dd9c0813a3c3ee2bd"}},
		{"resnet-50", "n300", map[string]any{"Engine": EngineForge, "ModelType": "CNN", "DockerImage": ImageRepoForge + ":0.13.0-079a2c2"}},
		{"Llama-3.1-8B-Instruct", "p150", map[string]any{"Status": StatusExperimental, "KnownIssues": []KnownIssue{{Workflow: "EVALS", Task: "meta_ifeval"}, {Workflow: "EVALS", Task: "meta_gpqa_cot"}, {Workflow: "EVALS", Task: "longbench_fewshot_e"}, {Workflow: "EVALS", Task: "longbench_summarization_e"}, {Workflow: "EVALS", Task: "longbench_code_e"}}}},
		{"AFM-4.5B", "n300", map[string]any{"ParamCountB": 4, "MinDiskGB": 28, "MinRAMGB": 10.0}},
		{"whisper-large-v3", "galaxy", map[string]any{"MaxConcurrency": 32, "Targets": []PerfTarget{{Concurrency: 32, TTFTms: 800, TputUser: 65.55, Task: "asr", TTFTStreamingMs: 900, RTR: 10.905, Tolerance: 0.05}}}},
		{"Qwen3-4B", "n150", map[string]any{"UsesTensorModelCache": false, "Engine": EngineForge}},
		{"Qwen/Qwen2.5-VL-7B-Instruct", "n300", map[string]any{"SupportedModalities": []string{"text", "image"}, "Metadata": map[string]string{"tool_call_parser_name": "hermes"}}},
		{"Llama-3.3-70B-Instruct", "t3k", map[string]any{"TensorCacheTimeoutS": 5400.0, "Impl": "tt_transformers"}},
	}
	for _, tt := range tests {
		s, err := Lookup(tt.model, tt.device)
		if err != nil {
			t.Errorf("%s on %s: %v", tt.model, tt.device, err)
			continue
		}
		checkFields(t, s, tt.want)
	}
}

func TestEnvOverrides(t *testing.T) {
	s, err := Lookup("gpt-oss-20b", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	env := Env(s)
	if env["MESH_DEVICE"] != "(4, 8)" || env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] != "1" || env["ARCH_NAME"] != "wormhole_b0" {
		t.Errorf("env %v", env)
	}
	m, err := Lookup("FLUX.1-dev", "t3k")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Env(m)["VLLM_TARGET_DEVICE"]; ok {
		t.Error("media spec got vLLM engine env")
	}
	if Env(m)["MESH_DEVICE"] != "T3K" {
		t.Errorf("media env %v", Env(m))
	}
}

func TestLookupErrors(t *testing.T) {
	tests := []struct{ model, device, want string }{
		{"Llama-3.1-8B-Instruc", "n150", `unknown model "Llama-3.1-8B-Instruc" (did you mean Llama-3.1-8B-Instruct`},
		{"totally-unknown-thing", "n150", `unknown model "totally-unknown-thing"`},
		{"Llama-3.2-1B-Instruct", "p150", "model Llama-3.2-1B-Instruct does not support device p150; supported: n150, n300, t3k"},
		{"Qwen3-8B", "n3000", `unknown device "n3000" (did you mean n300`},
		{"Qwen3-8B", "cpu", "model Qwen3-8B does not support device cpu; supported: n150, n300, t3k, galaxy_t3k, galaxy, p300"},
	}
	for _, tt := range tests {
		_, err := Lookup(tt.model, tt.device)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s/%s: got %v, want %q", tt.model, tt.device, err, tt.want)
		}
	}
	if _, err := Device("n3000"); err == nil || !strings.Contains(err.Error(), "did you mean n300") {
		t.Errorf("device: %v", err)
	}
}

func TestLookupCaseAndRepo(t *testing.T) {
	for _, name := range []string{"llama-3.2-1b-instruct", "META-LLAMA/Llama-3.2-1B-Instruct", " Llama-3.2-1B-Instruct "} {
		s, err := Lookup(name, "N300")
		if err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		if s.ModelName != "Llama-3.2-1B-Instruct" || s.Device != "n300" {
			t.Errorf("%q: %s on %s", name, s.ModelName, s.Device)
		}
	}
}

func TestSpecsAreCopies(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Fatal(err)
	}
	s.Env["MESH_DEVICE"] = "changed"
	s.VllmArgs["seed"] = 1
	s.Targets[0].TTFTms = 1
	s.OverrideTTConfig["trace_region_size"] = 1
	again, err := Lookup("Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Fatal(err)
	}
	if again.Env["MESH_DEVICE"] != "N150" || again.VllmArgs["seed"] != 9472 || again.Targets[0].TTFTms != 89 || again.OverrideTTConfig["trace_region_size"] != 52000000 {
		t.Errorf("catalog was modified through a returned spec: %+v", again)
	}
	d, _ := Device("t3k")
	d.DPSubDevices["4"] = "x"
	if d2, _ := Device("t3k"); d2.DPSubDevices["4"] != "n300" {
		t.Error("device table was modified")
	}
}

func TestTiers(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n300")
	if err != nil {
		t.Fatal(err)
	}
	tiers := Tiers(s)
	if len(tiers) != 3 {
		t.Fatalf("tiers %+v", tiers)
	}
	want := []struct {
		tier                 string
		ttft, tputUser, tput float64
	}{
		{TierFunctional, 580, 4.2, 0},
		{TierComplete, 116, 21, 0},
		{TierTarget, 58, 42, 0},
	}
	for i, w := range want {
		got := tiers[i]
		pt := got.Targets[0]
		if got.Tier != w.tier || !near(pt.TTFTms, w.ttft) || !near(pt.TputUser, w.tputUser) || !near(pt.Tput, w.tput) {
			t.Errorf("tier %d: %s %+v, want %+v", i, got.Tier, pt, w)
		}
	}
	none, err := Lookup("Qwen3-32B", "p150x8")
	if err != nil {
		t.Fatal(err)
	}
	if got := Tiers(none); got != nil {
		t.Errorf("spec without targets has tiers %v", got)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestRequiredTiers(t *testing.T) {
	tests := map[string][]string{
		StatusExperimental: nil,
		StatusFunctional:   {TierFunctional},
		StatusComplete:     {TierFunctional, TierComplete},
		StatusTopPerf:      {TierFunctional, TierComplete, TierTarget},
		"bogus":            nil,
	}
	for status, want := range tests {
		if got := RequiredTiers(status); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", status, got, want)
		}
	}
}

func TestParamCount(t *testing.T) {
	tests := map[string]int{
		"deepseek-ai/DeepSeek-R1-Distill-Llama-70B": 70,
		"Qwen/Qwen2.5-72B":                          72,
		"meta-llama/Llama-3.1-8B":                   8,
		"arcee-ai/AFM-4.5B":                         4,
		"Wan-AI/Wan2.2-T2V-A14B-Diffusers":          14,
		"Qwen/Qwen3-Embedding-0.6B":                 0,
	}
	for repo, want := range tests {
		if got, ok := ParamCountB(repo); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", repo, got, ok, want)
		}
	}
	if _, ok := ParamCountB("deepseek-ai/DeepSeek-R1-0528"); ok {
		t.Error("DeepSeek-R1-0528 has no parameter count in its name")
	}
}

func TestDevices(t *testing.T) {
	tests := []struct {
		name  string
		chips int
		mesh  string
		arch  string
	}{
		{"n150", 1, "N150", "wormhole_b0"},
		{"n300", 2, "N300", "wormhole_b0"},
		{"t3k", 8, "T3K", "wormhole_b0"},
		{"galaxy", 32, "TG", "wormhole_b0"},
		{"GALAXY_T3K", 8, "T3K", "wormhole_b0"},
		{"p150x4", 4, "P150x4", "blackhole"},
		{"p300x2", 4, "P300x2", "blackhole"},
		{"blackhole_galaxy", 32, "BH-Galaxy", "blackhole"},
		{"cpu", 0, "CPU", ""},
	}
	for _, tt := range tests {
		d, err := Device(tt.name)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if d.Chips != tt.chips || d.Mesh != tt.mesh || d.Arch != tt.arch {
			t.Errorf("%s: %+v", tt.name, d)
		}
	}
	g, _ := Device("galaxy")
	if sub, ok := g.DataParallelSubDevice(4); !ok || sub != "t3k" {
		t.Errorf("galaxy dp4 → %q", sub)
	}
	if c, _ := Device("cpu"); c.Hardware() {
		t.Error("cpu is not hardware")
	}
}

func TestMedia(t *testing.T) {
	m, err := Media("tt-whisper", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	if m.Mesh != [2]int{1, 1} || m.Workers != 32 || m.MaxBatchSize != 2 {
		t.Errorf("%+v", m)
	}
	m, err = Media("tt-wan2.2-i2v-lora", "blackhole_galaxy")
	if err != nil || m.Mesh != [2]int{4, 8} {
		t.Errorf("%+v %v", m, err)
	}
	if _, err := Media("tt-whisper", "p150x8"); err == nil || !strings.Contains(err.Error(), "supported: n150, n300") {
		t.Errorf("got %v", err)
	}
}

func TestSpecJSON(t *testing.T) {
	s, err := Lookup("Qwen3-8B", "n300")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"model_id":"id_tt-transformers_Qwen3-8B_n300"`, `"max_context":40960`, `"ttft_ms":42`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json lacks %s", want)
		}
	}
}

func TestKnownIssueLink(t *testing.T) {
	for _, tc := range []struct {
		k          KnownIssue
		scope, url string
	}{
		{KnownIssue{Workflow: "BENCHMARKS", Task: "isl-128_osl-1024_con-32", Reason: "GH#2600 - OOM on T3K"}, "BENCHMARKS isl-128_osl-1024_con-32",
			"https://github.com/tenstorrent/tt-inference-server/issues/2600"},
		{KnownIssue{Workflow: "EVALS", Reason: "see https://example.com/t/1 (flaky)"}, "EVALS (every task)", "https://example.com/t/1"},
		{KnownIssue{Workflow: "EVALS", Task: "aime25"}, "EVALS aime25", ""},
	} {
		if got := tc.k.Scope(); got != tc.scope {
			t.Errorf("%+v: scope %q, want %q", tc.k, got, tc.scope)
		}
		if got := tc.k.Link(); got != tc.url {
			t.Errorf("%+v: link %q, want %q", tc.k, got, tc.url)
		}
	}
}
