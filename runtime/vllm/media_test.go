package vllm

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/units"
)

func TestPlanMedia(t *testing.T) {
	spec := lookup(t, "whisper-large-v3", "n300")
	u := &units.Unit{Name: "asr", Model: "whisper-large-v3", Device: "n300", Chips: []int{2, 3}, Spec: spec}
	u.Media.MaxAudioDurationSeconds = 90
	l, err := PlanWith(u, spec, 9200, PlanOptions{EnvFile: "/run/ttis/secrets.env"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, want := range []string{
		"docker run --rm --name ttis-asr --env-file /run/ttis/secrets.env --ipc host",
		"--device /dev/tenstorrent/2:/dev/tenstorrent/2 --device /dev/tenstorrent/3:/dev/tenstorrent/3",
		"--mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G",
		"--publish 127.0.0.1:9200:8000",
		"-e MODEL=whisper-large-v3", "-e DEVICE=n300", "-e MODEL_RUNNER=tt-whisper",
		// tt-whisper on an n300: one single-chip worker.
		"-e DEVICE_IDS=(2)", "-e DEVICE_MESH_SHAPE=1,1", "-e MAX_BATCH_SIZE=1",
		"-e MAX_AUDIO_DURATION_SECONDS=90",
		"-e HF_HOME=/home/container_app_user/cache_root/huggingface",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q:\n%s", want, argv)
		}
	}
	for _, bad := range []string{"API_KEY", "NO_AUTH", "--no-auth", "--model", "--tt-device"} {
		if strings.Contains(argv, bad) {
			t.Errorf("argv carries %q:\n%s", bad, argv)
		}
	}
	if !strings.HasSuffix(argv, " "+spec.DockerImage) || l.Model != "whisper-large-v3" || l.Addr != "127.0.0.1:9200" {
		t.Errorf("argv ends %q, model %q, addr %q", argv[len(argv)-60:], l.Model, l.Addr)
	}
	// The container is exactly run.py's media command with the unit's
	// layout added: the same builder.
	want, err := container.Build(spec, container.Options{Name: "ttis-asr", EnvFile: "/run/ttis/secrets.env", DeviceIDs: []int{2, 3},
		BindHost: "127.0.0.1", ServicePort: 9200, DisableTraceCapture: true,
		Media: &container.Media{Model: "whisper-large-v3", Device: "n300", Runner: "tt-whisper", DeviceIDs: "(2)", MeshShape: "1,1", MaxBatchSize: 1},
		Env:   map[string]string{"MAX_AUDIO_DURATION_SECONDS": "90"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want.Argv, l.Argv) {
		t.Errorf("media plan differs from container.Build:\n%v\n%v", want.Argv, l.Argv)
	}
	// A local command gets the same environment, SERVICE_PORT and the
	// start's secrets, none of it in argv.
	u.Vllm.Command = []string{"python", "main.py", "--port={port}"}
	u.Vllm.Env = map[string]string{"DEVICE_IDS": "(3)"}
	l, err = PlanWith(u, spec, 9201, PlanOptions{Secrets: map[string]string{"API_KEY": "k-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Argv, " ") != "python main.py --port=9201" || !slices.Contains(l.Env, "SERVICE_PORT=9201") ||
		!slices.Contains(l.Env, "DEVICE_IDS=(3)") || !slices.Contains(l.Env, "API_KEY=k-secret") || !slices.Contains(l.Env, "MODEL_RUNNER=tt-whisper") {
		t.Errorf("command %v env %v", l.Argv, l.Env)
	}
}

// TestPlanMediaDeviceIDs maps [media] device_ids (positions in the unit's
// chips) to host chip ids, and rejects a group beyond the claimed chips.
func TestPlanMediaDeviceIDs(t *testing.T) {
	spec := lookup(t, "stable-diffusion-xl-base-1.0", "t3k")
	u := &units.Unit{Name: "sdxl", Model: spec.ModelName, Device: "t3k", Chips: []int{8, 9, 10, 11, 12, 13, 14, 15}, Spec: spec}
	u.Media.DeviceIDs = "(0,1),(2,3),(4,5),(6,7)"
	l, err := PlanWith(u, spec, 9300, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	// The C++ SDXL server's defaults (run.py) come first; the unit's
	// layout replaces DEVICE_IDS in place.
	for _, want := range []string{"-e SERVER_MODE=cpp", "-e DEVICE_IDS=(8,9),(10,11),(12,13),(14,15)", "-e MODEL=stable-diffusion-xl-base-1.0", "-e DEVICE=t3k"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q:\n%s", want, argv)
		}
	}
	if strings.Count(argv, "DEVICE_IDS=") != 1 {
		t.Errorf("DEVICE_IDS twice:\n%s", argv)
	}
	u.Chips = []int{8, 9}
	if _, err := PlanWith(u, spec, 9300, PlanOptions{}); err == nil || !strings.Contains(err.Error(), "media.device_ids") {
		t.Errorf("device_ids beyond the chips: %v", err)
	}
	if keys := mediaKeys(spec, "k"); keys["API_KEY"] != "k" || keys["OPENAI_API_KEY"] != "k" {
		t.Errorf("the C++ server's keys: %v", keys)
	}
}

// TestMediaKeyTravelsInEnvFileOnly: the fresh API key of a media start
// reaches the container through the 0600 env file, next to the HF token,
// and never its argv, the log or the error.
func TestMediaKeyTravelsInEnvFileOnly(t *testing.T) {
	u := &units.Unit{Name: "asr", Model: "whisper-large-v3", Device: "n300", Chips: []int{0}}
	u.Vllm.Port = 18124
	runDir, record, logs, err := startWithFakeDocker(t, u)
	m := regexp.MustCompile(`API_KEY=(ttis-[A-Za-z0-9]+)`).FindStringSubmatch(record)
	if m == nil {
		t.Fatalf("no API_KEY in the env file:\n%s", record)
	}
	key := m[1]
	argv, _, _ := strings.Cut(record, "\n")
	if strings.Contains(argv, key) || strings.Contains(argv, "API_KEY") || strings.Contains(argv, testToken) {
		t.Errorf("secret in docker argv: %s", argv)
	}
	for _, want := range []string{"--env-file " + runDir + "/ttis-asr-", "envfile-mode: 600", "envfile-dir-mode: 700", "envfile: API_KEY=" + key, "HF_TOKEN=" + testToken, "-e MODEL_RUNNER=tt-whisper"} {
		if !strings.Contains(record, want) {
			t.Errorf("record lacks %q:\n%s", want, record)
		}
	}
	for _, s := range []string{logs, err.Error()} {
		if strings.Contains(s, key) || strings.Contains(s, testToken) {
			t.Errorf("secret leaked into logs or error: %s", s)
		}
	}
	if left, _ := os.ReadDir(runDir); len(left) != 0 {
		t.Errorf("env file folder left after a failed start: %v", left)
	}
}
