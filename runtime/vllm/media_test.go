package vllm

import (
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units"
)

func TestPlanMedia(t *testing.T) {
	spec := lookup(t, "whisper-large-v3", "n300")
	u := &units.Unit{Name: "asr", Model: "whisper-large-v3", Device: "n300", Chips: []int{2, 3}, Spec: spec}
	u.Media.MaxAudioDurationSeconds = 90
	l, err := PlanMedia(u, spec, 9200, "k")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, want := range []string{
		"--device /dev/tenstorrent/2:/dev/tenstorrent/2 --device /dev/tenstorrent/3:/dev/tenstorrent/3",
		"--publish 127.0.0.1:9200:8000",
		"-e MODEL=whisper-large-v3", "-e MODEL_RUNNER=tt-whisper", "-e DEVICE=n300",
		// tt-whisper on an n300: one single-chip worker.
		"-e DEVICE_IDS=(2)", "-e DEVICE_MESH_SHAPE=1,1", "-e MAX_BATCH_SIZE=1",
		"-e API_KEY=k", "-e MAX_AUDIO_DURATION_SECONDS=90",
		"-e HF_HOME=/home/container_app_user/cache_root/huggingface",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q:\n%s", want, argv)
		}
	}
	if !strings.HasSuffix(argv, " "+spec.DockerImage) || l.Model != "whisper-large-v3" || l.Addr != "127.0.0.1:9200" {
		t.Errorf("argv ends %q, model %q, addr %q", argv[len(argv)-60:], l.Model, l.Addr)
	}
	// A local command gets the same environment and SERVICE_PORT.
	u.Vllm.Command = []string{"python", "main.py", "--port={port}"}
	u.Vllm.Env = map[string]string{"DEVICE_IDS": "(3)"}
	l, err = PlanMedia(u, spec, 9201, "k")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Argv, " ") != "python main.py --port=9201" || !slices.Contains(l.Env, "SERVICE_PORT=9201") || !slices.Contains(l.Env, "DEVICE_IDS=(3)") {
		t.Errorf("command %v env %v", l.Argv, l.Env)
	}
	if _, err := PlanMedia(&units.Unit{Name: "llm", Model: "Llama-3.1-8B-Instruct"}, lookup(t, "Llama-3.1-8B-Instruct", "n300"), 9000, "k"); err == nil {
		t.Error("an LLM planned as a media server")
	}
}
