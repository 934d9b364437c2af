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
		"src=/srv/weights/llama,dst=/home/container_app_user/readonly_weights_mount/Llama-3.1-8B-Instruct,readonly",
		"-e MODEL_WEIGHTS_DIR=/home/container_app_user/readonly_weights_mount/Llama-3.1-8B-Instruct",
		"-e MESH_DEVICE=N300",
		" " + catalog.DockerImage(spec) + " --model meta-llama/Llama-3.1-8B-Instruct --tt-device n300 --no-auth --service-port 8001",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("docker argv lacks %q:\n%s", want, argv)
		}
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
