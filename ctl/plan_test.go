package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const planToken = "hf_PLANsecretTOKEN42"

// writeUnitWithToken writes unit NAME.toml with body next to an
// hf-token file holding planToken.
func writeUnitWithToken(t *testing.T, name, body string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hf-token"), []byte(planToken), 0o600); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name+".toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func writePlanUnit(t *testing.T) (dir, path string) {
	t.Helper()
	return writeUnitWithToken(t, "llama", `model = "Llama-3.1-8B-Instruct"
device = "n300"
chips = [2, 3]
listen = "127.0.0.1:8000"

[vllm]
port = 8101
hf_token_file = "hf-token"
cache_dir = "/srv/ttis/cache"
trace_capture = false
env = { MY_API_KEY = "sk-unit-secret", TT_LOGGER = "info" }
args = { max_num_seqs = "16" }

[vllm.override_tt_config]
trace_region_size = 50000000
`)
}

// planShows runs ttisctl plan on path and checks that it succeeds and
// prints every want.
func planShows(t *testing.T, path string, wants ...string) string {
	t.Helper()
	out, code := runCtl(t, "plan", path)
	if code != 0 {
		t.Fatalf("plan exited %d:\n%s", code, out)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	return out
}

func TestPlanCommand(t *testing.T) {
	dir, path := writePlanUnit(t)
	out := planShows(t, path,
		"docker run \\\n  --rm \\\n  --name ttis-llama \\\n  --env-file ",
		"--device /dev/tenstorrent/2:/dev/tenstorrent/2",
		"--publish 127.0.0.1:8101:8101",
		"--mount type=bind,src=/srv/ttis/cache,dst=/home/container_app_user/cache_root",
		"-e TT_CACHE_PATH=/home/container_app_user/cache_root/tt_metal_cache/cache_Llama-3.1-8B-Instruct/N300",
		"-e 'MY_API_KEY=<redacted>'",
		"-e TT_LOGGER=info",
		"--disable-trace-capture",
		"--service-port 8101",
		"--max-num-seqs 16",
		`"trace_region_size": 50000000`,
	)
	for _, secret := range []string{planToken, "sk-unit-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("plan output shows a secret:\n%s", out)
		}
	}

	// By name from --units-dir, as JSON.
	stdout, stderr, code := runCtlStdout(t, "plan", "llama", "--units-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("plan -o json exited %d: %s", code, stderr)
	}
	if strings.Contains(stdout, planToken) || strings.Contains(stdout, "sk-unit-secret") {
		t.Errorf("plan -o json shows a secret:\n%s", stdout)
	}
	var got planOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if got.Unit != "llama" || got.Argv[0] != "docker" || got.EnvFile == "" || got.OverrideTTConfig["trace_region_size"] == nil {
		t.Errorf("plan json = %+v", got)
	}
}

func TestPlanCommandErrors(t *testing.T) {
	out, code := runCtl(t, "plan", "nope", "--units-dir", t.TempDir())
	if code != exitNoUnit || !strings.Contains(out, "give a unit file") {
		t.Errorf("missing unit: %d %s", code, out)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(p, []byte("model = \"Qwen3-8B\"\ndevice = \"n300\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runCtl(t, "plan", p)
	if code != exitError || !strings.Contains(out, "only vllm units have a plan") {
		t.Errorf("sim unit: %d %s", code, out)
	}
}

// TestPlanCommandMedia plans a media unit: tt-media-server's command from
// the same builder, the unit's worker layout, and the key only named.
func TestPlanCommandMedia(t *testing.T) {
	body := `model = "whisper-large-v3"
device = "t3k"
runtime = "vllm"
chips = [8, 9, 10, 11, 12, 13, 14, 15]
listen = "127.0.0.1:8000"

[media]
device_ids = "(0),(1),(2),(3),(4),(5),(6),(7)"
max_audio_duration_seconds = 120

[vllm]
port = 8201
hf_token_file = "hf-token"
`
	_, path := writeUnitWithToken(t, "asr", body)
	out := planShows(t, path,
		"--name ttis-asr \\\n  --env-file ",
		"--device /dev/tenstorrent/15:/dev/tenstorrent/15",
		"--publish 127.0.0.1:8201:8000",
		"-e MODEL=whisper-large-v3", "-e DEVICE=t3k", "-e MODEL_RUNNER=tt-whisper",
		"-e 'DEVICE_IDS=(8),(9),(10),(11),(12),(13),(14),(15)'", "-e DEVICE_MESH_SHAPE=1,1",
		"-e MAX_AUDIO_DURATION_SECONDS=120",
		"API_KEY, HF_TOKEN go in --env-file",
	)
	for _, bad := range []string{planToken, "-e API_KEY", "-e 'API_KEY", "--no-auth", "--tt-device"} {
		if strings.Contains(out, bad) {
			t.Errorf("plan output shows %q:\n%s", bad, out)
		}
	}

	// A local command gets the key as environment, shown redacted.
	body += `command = ["python", "-m", "tt_media_server", "--port", "{port}"]
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCtlStdout(t, "plan", path, "-o", "json")
	if code != 0 {
		t.Fatalf("plan -o json exited %d: %s", code, stderr)
	}
	var got planOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if strings.Contains(stdout, planToken) || !slices.Contains(got.Env, "API_KEY=<redacted>") || !slices.Contains(got.Env, "HF_TOKEN=<redacted>") ||
		!slices.Contains(got.Env, "SERVICE_PORT=8201") || got.EnvFile != "" || got.OverrideTTConfig != nil {
		t.Errorf("local media plan = %+v", got)
	}
}

// TestPlanDevMode: --dev-mode plans with the development specs, as if the
// unit said catalog = "dev" (as `ttisctl catalog --dev-mode` lists them): a
// model only the dev catalog has plans with it and not without, and the
// output names the catalog.
func TestPlanDevMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.toml")
	// gemma-4-12B-it is in tt-inference-server's dev specs only (11ac526e0);
	// dev specs pin no image, so the unit names one.
	if err := os.WriteFile(path, []byte(`model = "gemma-4-12B-it"
device = "p300x2"
chips = [0, 1, 2, 3]
listen = "127.0.0.1:8000"

[vllm]
port = 8101
image = "ghcr.io/example/vllm-dev:1"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, "plan", path)
	if code != exitError || !strings.Contains(out, `unknown model "gemma-4-12B-it"`) || !strings.Contains(out, `the dev catalog has it: set catalog = "dev"`) {
		t.Errorf("prod plan of a dev-only model: %d %s", code, out)
	}
	out, code = runCtl(t, "plan", "--dev-mode", path)
	if code != 0 || !strings.Contains(out, "# unit g: gemma-4-12B-it on p300x2 (runtime vllm, dev catalog)") ||
		!strings.Contains(out, "--model google/gemma-4-12B-it") || !strings.Contains(out, "ghcr.io/example/vllm-dev:1") {
		t.Errorf("plan --dev-mode: %d\n%s", code, out)
	}
	stdout, stderr, code := runCtlStdout(t, "plan", "g", "--units-dir", dir, "--dev-mode", "-o", "json")
	var got planOutput
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || got.Catalog != "dev" {
		t.Errorf("plan --dev-mode -o json: %d %v %s %s", code, err, stdout, stderr)
	}
	// A prod unit's plan says prod.
	_, prod := writePlanUnit(t)
	planShows(t, prod, "(runtime vllm, prod catalog)")
	// The flag is the same on catalog, plan and doctor.
	for _, cmd := range []string{"catalog", "plan", "doctor"} {
		if out, _ := runCtl(t, cmd, "--help"); !strings.Contains(out, "--dev-mode") {
			t.Errorf("ttisctl %s has no --dev-mode:\n%s", cmd, out)
		}
	}
}
