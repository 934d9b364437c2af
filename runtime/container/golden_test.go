package container

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/runpy")

// goldenHeader says where the expected commands come from; every golden file
// starts with it.
const goldenHeader = `# The command tt-inference-server's run.py prints for
#   python3 run.py --model MODEL --device DEVICE --workflow server --docker-server --print-docker-cmd
# with every other flag at its default (commit 11ac526e0):
#   run.py lines 169-187 (--service-port 8000, --bind-host 0.0.0.0), 383-391 (--image-user 1000),
#   1077-1095 (setup_host without --host-volume: a named volume), 1113-1157 (--print-docker-cmd);
#   workflows/run_docker_server.py lines 289-497 (generate_docker_run_command) and 195-217
#   (format_docker_command). The container name's random part is fixed to 00000000 and the
#   .env path (default_dotenv_path) to /path/to/tt-inference-server/.env.
`

// runpyDefaults are run.py's defaults for the golden files.
func runpyDefaults() Options {
	return Options{Name: "tt-inference-server-00000000", EnvFile: "/path/to/tt-inference-server/.env"}
}

// specsWhere are the catalog's specs that keep says yes to.
func specsWhere(keep func(*catalog.Spec) bool) []catalog.Spec {
	var out []catalog.Spec
	for _, s := range catalog.Specs() {
		if keep(&s) {
			out = append(out, s)
		}
	}
	return out
}

// isLLM: the LLM and VLM specs, served by vLLM images (and the few forge
// LLMs).
func isLLM(s *catalog.Spec) bool { return s.ModelType == "LLM" || s.ModelType == "VLM" }

func TestRunPyGolden(t *testing.T) {
	checkGolden(t, filepath.Join("testdata", "runpy"), goldenHeader, specsWhere(isLLM), 100)
}

// mediaGoldenHeader adds, for the media rows, where their environment comes
// from and that the API key is not in it.
const mediaGoldenHeader = goldenHeader + `# Media and forge specs: run_docker_server.py lines 341-349 (port 8000 inside), 400-413 (the spec's
#   env_vars, then get_media_server_docker_env_vars, lines 141-156, or the C++ SDXL server's, lines 47-118),
#   475-477 (no arguments after the image). API_KEY is unset in run.py's environment (lines 409-413), so
#   the command carries none; a ttis start passes its key in the --env-file instead.
`

// TestRunPyGoldenMedia covers the media specs (images, audio, speech,
// CNNs, embeddings, video), served by tt-media-server and forge images.
func TestRunPyGoldenMedia(t *testing.T) {
	checkGolden(t, filepath.Join("testdata", "runpy-media"), mediaGoldenHeader, specsWhere((*catalog.Spec).IsMedia), 80)
}

// checkGolden compares each spec's command with its golden file in dir
// (go test -update rewrites them) and flags golden files of no spec; fewer
// than atLeast specs means the catalog lost rows.
func checkGolden(t *testing.T, dir, header string, specs []catalog.Spec, atLeast int) {
	t.Helper()
	if len(specs) < atLeast {
		t.Fatalf("only %d specs for %s in the catalog, want at least %d", len(specs), dir, atLeast)
	}
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, spec := range specs {
		name := spec.ModelID + ".txt"
		p, err := Build(&spec, runpyDefaults())
		if errors.Is(err, ErrNotSingleHost) {
			continue
		}
		seen[name] = true
		if err != nil {
			t.Errorf("%s: %v", spec.ModelID, err)
			continue
		}
		got := header + Format(p.Argv) + "\n"
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test -update to create it)", spec.ModelID, err)
			continue
		}
		if string(want) != got {
			t.Errorf("%s: command differs from %s:\n--- want\n%s\n--- got\n%s", spec.ModelID, path, want, got)
		}
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if seen[f.Name()] {
			continue
		}
		if *update {
			_ = os.Remove(filepath.Join(dir, f.Name()))
			continue
		}
		t.Errorf("golden file %s names no catalog spec (go test -update removes it)", f.Name())
	}
}

// runpyCommand is run.py's default command for MODEL on DEVICE, as one
// line.
func runpyCommand(t *testing.T, model, device string) (*catalog.Spec, string) {
	t.Helper()
	spec, err := catalog.Lookup(model, device)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(spec, runpyDefaults())
	if err != nil {
		t.Fatal(err)
	}
	return spec, strings.Join(p.Argv, " ")
}

// TestRunPyGoldenShape pins, independently of the golden files, the parts
// of one command that matter most.
func TestRunPyGoldenShape(t *testing.T) {
	spec, got := runpyCommand(t, "Llama-3.1-8B-Instruct", "n300")
	want := "docker run --rm --name tt-inference-server-00000000 --env-file /path/to/tt-inference-server/.env --ipc host" +
		" --device /dev/tenstorrent:/dev/tenstorrent --mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G" +
		" --publish 0.0.0.0:8000:8000 --volume volume_id_tt_transformers-Llama-3.1-8B-Instruct:/home/container_app_user/cache_root " +
		spec.DockerImage + " --model meta-llama/Llama-3.1-8B-Instruct --tt-device n300"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRunPyGoldenMediaShape pins, independently of the golden files, a
// Python media server's command and the C++ SDXL server's environment, as
// read from run_docker_server.py (lines 141-156 and 90-118).
func TestRunPyGoldenMediaShape(t *testing.T) {
	spec, got := runpyCommand(t, "whisper-large-v3", "n300")
	want := "docker run --rm --name tt-inference-server-00000000 --env-file /path/to/tt-inference-server/.env --ipc host" +
		" --device /dev/tenstorrent:/dev/tenstorrent --mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G" +
		" --publish 0.0.0.0:8000:8000 --volume " + VolumeName(spec) + ":/home/container_app_user/cache_root"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant prefix\n%s", got, want)
	}
	tail := " -e CACHE_ROOT=/home/container_app_user/cache_root -e HF_HOME=/home/container_app_user/cache_root/huggingface" +
		" -e MODEL=whisper-large-v3 -e DEVICE=n300 " + spec.DockerImage
	if !strings.HasSuffix(got, tail) {
		t.Errorf("got\n%s\nwant suffix\n%s", got, tail)
	}

	sdxl, cpp := runpyCommand(t, "stable-diffusion-xl-base-1.0", "galaxy")
	want = "-e SERVER_MODE=cpp -e MODEL_SERVICE=image -e MODEL_RUNNER_TYPE=tt_sdxl_generate -e DEVICE_MESH_SHAPE=1,1" +
		" -e IS_GALAXY=true -e DEVICE_IDS=(0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15),(16),(17),(18),(19),(20),(21),(22),(23),(24),(25),(26),(27),(28),(29),(30),(31)" +
		" -e MAX_BATCH_SIZE=1 -e SDXL_IMAGE_RESOLUTION=1024x1024 " + sdxl.DockerImage
	if !strings.HasSuffix(cpp, want) {
		t.Errorf("got\n%s\nwant suffix\n%s", cpp, want)
	}
	if strings.Contains(cpp, " -e MODEL=") || strings.Contains(cpp, " -e CACHE_ROOT=") {
		t.Errorf("the C++ server got the Python server's variables:\n%s", cpp)
	}
	if !IsCppMedia(sdxl) || IsCppMedia(spec) || len(MediaKeyVars(sdxl)) != 2 {
		t.Error("IsCppMedia/MediaKeyVars")
	}
}
