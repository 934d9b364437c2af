package vllm

import (
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

func lookup(t *testing.T, model, device string) *catalog.Spec {
	t.Helper()
	spec, err := catalog.Lookup(model, device)
	if err != nil {
		t.Fatalf("catalog lookup: %v", err)
	}
	return spec
}

func TestPlanLocalCommand(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n300")
	u := &units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0}}
	u.Vllm.Command = []string{"python", "-m", "vllm.entrypoints.openai.api_server", "{args}", "--tt-device={device}"}
	u.Vllm.Args = map[string]string{"max_num_seqs": "4"}
	u.Vllm.Env = map[string]string{"EXTRA": "1"}
	l, err := Plan(u, spec, 9123)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, want := range []string{
		"python -m vllm.entrypoints.openai.api_server ",
		"--port 9123", "--host 127.0.0.1",
		"--max-num-seqs 4", // the unit's override wins
		"--model meta-llama/Llama-3.1-8B-Instruct",
		"--block-size 64",
		"--tt-device=n300",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv %q lacks %q", argv, want)
		}
	}
	if strings.Count(argv, "--max-num-seqs") != 1 {
		t.Errorf("max-num-seqs given twice: %q", argv)
	}
	if l.Addr != "127.0.0.1:9123" || l.Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("addr %q model %q", l.Addr, l.Model)
	}
	if !slices.Contains(l.Env, "EXTRA=1") || !slices.Contains(l.Env, "MESH_DEVICE=N300") {
		t.Errorf("env %v lacks the unit's and the catalog's variables", l.Env)
	}
}

func TestPlanDocker(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n300")
	u := &units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{2, 3}}
	u.Vllm.WeightsDir = "/srv/weights/llama"
	l, err := Plan(u, spec, 8001)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, want := range []string{
		"docker run --rm --name ttis-llama --ipc host",
		"--device /dev/tenstorrent/2:/dev/tenstorrent/2",
		"--device /dev/tenstorrent/3:/dev/tenstorrent/3",
		"type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G",
		"--publish 127.0.0.1:8001:8001",
		// run.py mounts --host-weights-dir under its own base name
		// (setup_host.py lines 127-137).
		"src=/srv/weights/llama,dst=/home/container_app_user/readonly_weights_mount/llama,readonly",
		"-e MODEL_WEIGHTS_DIR=/home/container_app_user/readonly_weights_mount/llama",
		" " + catalog.DockerImage(spec) + " --model meta-llama/Llama-3.1-8B-Instruct --tt-device n300 --no-auth --service-port 8001",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("docker argv lacks %q:\n%s", want, argv)
		}
	}
	// The vLLM image derives MESH_DEVICE and the rest from its bundled spec;
	// run.py passes spec variables only to media and forge containers
	// (run_docker_server.py lines 400-408).
	if strings.Contains(argv, "MESH_DEVICE") {
		t.Errorf("spec environment passed to a vLLM image: %s", argv)
	}
	if strings.Contains(argv, "/dev/tenstorrent:/dev/tenstorrent") {
		t.Errorf("a unit with chips must not get every device: %s", argv)
	}
}

func TestPlanErrors(t *testing.T) {
	u := &units.Unit{Name: "x", Model: "m", Device: "n150"}
	if _, err := Plan(u, nil, 8000); err == nil || !strings.Contains(err.Error(), "no catalog entry") {
		t.Errorf("nil spec: %v", err)
	}
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n150")
	if _, err := Plan(u, spec, 70000); err == nil || !strings.Contains(err.Error(), "invalid upstream port") {
		t.Errorf("bad port: %v", err)
	}
}

func TestArgFlags(t *testing.T) {
	got, err := argFlags(map[string]any{
		"enforce_eager":     true,
		"disable_log_stats": false,
		"max_model_len":     131072,
		"override":          map[string]any{"a": 1},
		"served_model_name": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--enforce-eager", "--max-model-len", "131072", "--override", `{"a":1}`, "--served-model-name", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("argFlags = %q, want %q", got, want)
	}
}

func TestPlanDockerOverrides(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n300")
	u := &units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0}}
	u.Vllm.OverrideTTConfig = map[string]any{"trace_region_size": int64(50000000), "fabric_config": "FABRIC_1D"}
	u.Vllm.Args = map[string]string{"max_num_seqs": "16"}
	off := false
	u.Vllm.TraceCapture = &off
	l, err := PlanWith(u, spec, 8001, PlanOptions{EnvFile: "/run/ttis/llama/hf.env"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, want := range []string{
		"--env-file /run/ttis/llama/hf.env --ipc host",
		"--no-auth --disable-trace-capture --service-port 8001 --max-num-seqs 16 --additional-config ",
		`"fabric_config": "FABRIC_1D"`,
		`"trace_region_size": 50000000`,
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("docker argv lacks %q:\n%s", want, argv)
		}
	}
	// The catalog's own settings stay unless the unit deletes them.
	for k := range spec.OverrideTTConfig {
		if !strings.Contains(argv, `"`+k+`": `) {
			t.Errorf("catalog tt setting %s lost in %s", k, argv)
		}
	}
}

func TestPlanDockerDeletesCatalogTTKey(t *testing.T) {
	var spec *catalog.Spec
	for _, s := range catalog.Specs() {
		if s.Engine == "VLLM" && len(s.OverrideTTConfig) > 0 && s.Device == "n300" {
			spec = &s
			break
		}
	}
	if spec == nil {
		t.Skip("no n300 spec with override_tt_config in the catalog")
	}
	var key string
	for k := range spec.OverrideTTConfig {
		key = k
	}
	u := &units.Unit{Name: "x", Model: spec.HFRepo, Device: "n300", Chips: []int{0}}
	u.Vllm.OverrideTTConfig = map[string]any{key: "", "extra": true}
	l, err := Plan(u, spec, 8001)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	if strings.Contains(argv, `"`+key+`"`) || !strings.Contains(argv, `"extra": true`) {
		t.Errorf("key %s not deleted or extra not added: %s", key, argv)
	}
}

func TestPlanRejectsWrapperFlags(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n300")
	u := &units.Unit{Name: "x", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0}}
	u.Vllm.Args = map[string]string{"service_port": "9"}
	if _, err := Plan(u, spec, 8001); err == nil || !strings.Contains(err.Error(), "set by the container's wrapper") {
		t.Errorf("wrapper flag accepted: %v", err)
	}
}
