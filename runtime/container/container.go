// Package container builds the `docker run` command of a catalog spec the
// way tt-inference-server's run.py builds it (`run.py --docker-server`,
// printed by `--print-docker-cmd`), so that a ttis unit starts the same
// container a Tenstorrent engineer would start by hand, and `ttisctl plan`
// can show it before anything runs.
//
// The reference is tenstorrent/tt-inference-server at commit 11ac526e0:
// workflows/run_docker_server.py generate_docker_run_command (lines 289-497),
// its _vllm_override_cli_args (lines 220-286), workflows/model_spec.py
// apply_overrides (lines 875-938), workflows/setup_host.py SetupConfig paths
// (lines 105-137) and run.py's defaults for the flags involved (lines
// 169-234, 342-391). Nothing in this package runs docker.
package container

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
)

// Container paths of tt-inference-server's release images
// (workflows/setup_host.py lines 58, 106-137; run_docker_server.py line 425).
const (
	ContainerHome           = "/home/container_app_user"
	ContainerCacheRoot      = ContainerHome + "/cache_root"
	ContainerReadonlyMounts = ContainerHome + "/readonly_weights_mount"
	// HugepagesDir is the host's 1 GiB hugepages mount, bound into every
	// container (run_docker_server.py line 338).
	HugepagesDir = "/dev/hugepages-1G"
	// DefaultServicePort is run.py's --service-port default (run.py line 173).
	DefaultServicePort = 8000
	// DefaultBindHost is run.py's --bind-host default (run.py line 185).
	DefaultBindHost = "0.0.0.0"
	// DefaultImageUser is the UID release images are built with; run.py
	// passes --user only for another one (run.py line 386,
	// run_docker_server.py line 334).
	DefaultImageUser = "1000"
	devicePath       = "/dev/tenstorrent"
)

// Engines of the catalog whose container this package knows how to start.
const (
	engineVLLM  = "VLLM"
	engineMedia = "MEDIA"
	engineForge = "FORGE"
)

// ErrNotSingleHost marks specs whose device is not one host's chips
// (multi-host systems, remote endpoints, cpu and gpu).
var ErrNotSingleHost = errors.New("device is not Tenstorrent chips on one host: run.py plans no single docker command for it")

// Options are the run.py flags (RuntimeConfig and SetupConfig fields) that
// shape the command. The zero value is run.py's defaults except where a
// field says otherwise.
type Options struct {
	// Name is the container name (run.py: "tt-inference-server-<uuid[:8]>").
	Name string
	// EnvFile is passed as --env-file; run.py always passes its .env (the
	// secrets HF_TOKEN and JWT_SECRET live there, never in argv). Empty
	// leaves the flag out.
	EnvFile string
	// ImageUser is --image-user ("" means 1000, which adds no --user).
	ImageUser string
	// DeviceIDs are --device-id: one --device per /dev/tenstorrent/N; none
	// maps the whole /dev/tenstorrent.
	DeviceIDs []int
	// BindHost and ServicePort are --bind-host (default 0.0.0.0) and
	// --service-port (default 8000).
	BindHost    string
	ServicePort int
	// HostVolume is --host-volume: a host folder bound at the container's
	// cache root (else a named docker volume per impl and model), which also
	// sets TT_CACHE_PATH.
	HostVolume string
	// HostWeightsDir is --host-weights-dir: pre-downloaded weights mounted
	// read-only, with MODEL_WEIGHTS_DIR pointing at them so the container
	// downloads nothing.
	HostWeightsDir string
	// NoAuth is --no-auth; DisableTraceCapture is --disable-trace-capture;
	// DisableMetalTimeout is --disable-metal-timeout.
	NoAuth              bool
	DisableTraceCapture bool
	DisableMetalTimeout bool
	// Image is --override-docker-image.
	Image string
	// OverrideTTConfig is --override-tt-config: merged over the spec's
	// override_tt_config, a nil value deleting a key.
	OverrideTTConfig map[string]any
	// VllmArgs is --vllm-override-args, forwarded to `vllm serve`.
	VllmArgs map[string]any
	// Media is the tt-media-server worker layout a ttis unit sets for a
	// MEDIA or FORGE container; nil leaves it to the server, as run.py does.
	Media *Media
	// Env adds -e variables after run.py's own (a ttis unit's [vllm] env).
	Env map[string]string
}

// Media is what a ttis unit tells tt-media-server beyond run.py's MODEL and
// DEVICE. run.py lets the server derive the runner and its worker layout
// from MODEL and DEVICE (tt-media-server's config/constants.py ModelConfigs);
// a unit may claim other chips and regroup them ([media] device_ids), so
// ttis passes the layout explicitly. Empty fields are left out.
type Media struct {
	Model  string // MODEL (tt-media-server's model name)
	Device string // DEVICE
	Runner string // MODEL_RUNNER
	// DeviceIDs is DEVICE_IDS: the workers' chip groups as host
	// /dev/tenstorrent ids, "(0,1),(2,3)".
	DeviceIDs    string
	MeshShape    string // DEVICE_MESH_SHAPE, "2,1"
	MaxBatchSize int    // MAX_BATCH_SIZE; 0 leaves it out
}

// Plan is a planned container.
type Plan struct {
	// Argv is the full command, argv[0] = "docker".
	Argv []string `json:"argv"`
	// Name is the container's name.
	Name string `json:"name"`
	// Image is the image it runs.
	Image string `json:"image"`
	// OverrideTTConfig is the merged override_tt_config the server gets.
	OverrideTTConfig map[string]any `json:"override_tt_config"`
}

// Build returns the `docker run` command of spec under o.
func Build(spec *catalog.Spec, o Options) (*Plan, error) {
	if spec == nil {
		return nil, errors.New("plan container: no catalog spec")
	}
	switch spec.Engine {
	case engineVLLM, engineMedia, engineForge:
	default:
		return nil, fmt.Errorf("plan container for %s: engine %q has no container", spec.ModelID, spec.Engine)
	}
	dev, err := catalog.Device(spec.Device)
	if err != nil {
		return nil, fmt.Errorf("plan container for %s: %w", spec.ModelID, err)
	}
	if dev.Multihost || dev.Remote || !dev.Hardware() {
		// run.py hands these to its MultiHostOrchestrator (run.py lines
		// 1114-1149) or to no container at all.
		return nil, fmt.Errorf("plan container for %s: %w", spec.ModelID, ErrNotSingleHost)
	}
	if o.BindHost == "" {
		o.BindHost = DefaultBindHost
	}
	if o.ServicePort == 0 {
		o.ServicePort = DefaultServicePort
	}
	if o.ServicePort < 0 || o.ServicePort > 65535 {
		return nil, fmt.Errorf("plan container for %s: invalid service port %d", spec.ModelID, o.ServicePort)
	}
	for _, d := range o.DeviceIDs {
		if d < 0 {
			return nil, fmt.Errorf("plan container for %s: invalid device id %d (want /dev/tenstorrent/N, N >= 0)", spec.ModelID, d)
		}
	}
	image := spec.DockerImage
	if o.Image != "" {
		image = o.Image
	}
	if image == "" {
		return nil, fmt.Errorf("plan container for %s: the catalog names no image; set [vllm] image", spec.ModelID)
	}
	p := &Plan{Name: o.Name, Image: image, OverrideTTConfig: MergeTTConfig(spec.OverrideTTConfig, o.OverrideTTConfig)}

	// run_docker_server.py lines 318-339.
	argv := []string{"docker", "run", "--rm", "--name", o.Name}
	if o.ImageUser != "" && o.ImageUser != DefaultImageUser {
		argv = append(argv, "--user", o.ImageUser)
	}
	if o.EnvFile != "" {
		argv = append(argv, "--env-file", o.EnvFile)
	}
	argv = append(argv, "--ipc", "host")
	if len(o.DeviceIDs) == 0 {
		argv = append(argv, "--device", devicePath+":"+devicePath)
	}
	for _, d := range o.DeviceIDs {
		p := devicePath + "/" + strconv.Itoa(d)
		argv = append(argv, "--device", p+":"+p)
	}
	argv = append(argv, "--mount", "type=bind,src="+HugepagesDir+",dst="+HugepagesDir)

	// Lines 341-355: media and forge servers listen on 8000 inside.
	port := strconv.Itoa(o.ServicePort)
	inner := port
	if spec.Engine != engineVLLM {
		inner = "8000"
	}
	argv = append(argv, "--publish", o.BindHost+":"+port+":"+inner)

	// Lines 357-372, with SetupConfig's paths (setup_host.py lines 105-137).
	if o.HostVolume != "" {
		argv = append(argv, "--mount", "type=bind,src="+o.HostVolume+",dst="+ContainerCacheRoot)
	} else {
		argv = append(argv, "--volume", VolumeName(spec)+":"+ContainerCacheRoot)
	}
	var weightsPath string
	if o.HostWeightsDir != "" {
		weightsPath = ContainerReadonlyMounts + "/" + filepath.Base(filepath.Clean(o.HostWeightsDir))
		argv = append(argv, "--mount", "type=bind,src="+o.HostWeightsDir+",dst="+weightsPath+",readonly")
	}

	// Lines 378-424: the environment, in run.py's order.
	env := []envVar{}
	if weightsPath != "" {
		env = append(env, envVar{"MODEL_WEIGHTS_DIR", weightsPath})
	}
	if o.HostVolume != "" {
		cacheDev := dev.Mesh
		if spec.SubDevice != "" {
			if sub, err := catalog.Device(spec.SubDevice); err == nil {
				cacheDev = sub.Mesh
			}
		}
		env = append(env, envVar{"TT_CACHE_PATH", ContainerCacheRoot + "/tt_metal_cache/cache_" + spec.ModelName + "/" + cacheDev})
	}
	if spec.Engine != engineVLLM {
		// The vLLM image reads its environment from its bundled model spec;
		// media and forge containers get theirs from the command.
		env = append(env, mediaEnv(spec, o)...)
	} else {
		for _, k := range slices.Sorted(maps.Keys(o.Env)) {
			env = append(env, envVar{k, o.Env[k]})
		}
	}
	// Lines 466-473: empty values are skipped; a later value of a key
	// replaces an earlier one in place, as a Python dict update does.
	for _, e := range dedupe(env) {
		if e.value != "" {
			argv = append(argv, "-e", e.key+"="+e.value)
		}
	}
	if o.DisableMetalTimeout {
		argv = append(argv, "-e", "DISABLE_METAL_OP_TIMEOUT=1")
	}

	// Lines 475-490.
	argv = append(argv, image)
	if spec.Engine == engineVLLM {
		argv = append(argv, "--model", spec.HFRepo, "--tt-device", spec.Device)
		if o.NoAuth {
			argv = append(argv, "--no-auth")
		}
		if o.DisableTraceCapture {
			argv = append(argv, "--disable-trace-capture")
		}
		if o.ServicePort != DefaultServicePort {
			argv = append(argv, "--service-port", port)
		}
		pass, err := PassthroughArgs(passthroughOverrides(spec, o))
		if err != nil {
			return nil, fmt.Errorf("plan container for %s: %w", spec.ModelID, err)
		}
		argv = append(argv, pass...)
	}
	p.Argv = argv
	return p, nil
}

// mediaEnv is a media or forge container's environment after the mounts'
// variables: run_docker_server.py lines 400-413 (the spec's env_vars, then
// get_media_server_docker_env_vars, lines 141-156, or for the C++ SDXL
// server _get_cpp_media_server_docker_env_vars, lines 90-118; then
// NO_AUTH), then the unit's layout and [vllm] env. The API key run.py takes
// from its own environment (lines 409-417) is no part of the command:
// ttis passes it through the --env-file (see MediaKeyVars).
func mediaEnv(spec *catalog.Spec, o Options) []envVar {
	var env []envVar
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, envVar{k, spec.Env[k]})
	}
	if cpp, ok := cppMediaEnv(spec); ok {
		env = append(env, cpp...)
	} else {
		env = append(env,
			envVar{"CACHE_ROOT", ContainerCacheRoot},
			envVar{"HF_HOME", ContainerCacheRoot + "/huggingface"},
			envVar{"MODEL", spec.ModelName},
			envVar{"DEVICE", strings.ToLower(spec.Device)})
	}
	if o.NoAuth {
		env = append(env, envVar{"NO_AUTH", "1"})
	}
	if m := o.Media; m != nil {
		env = append(env,
			envVar{"MODEL", m.Model},
			envVar{"DEVICE", m.Device},
			envVar{"MODEL_RUNNER", m.Runner},
			envVar{"DEVICE_IDS", m.DeviceIDs},
			envVar{"DEVICE_MESH_SHAPE", m.MeshShape})
		if m.MaxBatchSize > 0 {
			env = append(env, envVar{"MAX_BATCH_SIZE", strconv.Itoa(m.MaxBatchSize)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		env = append(env, envVar{k, o.Env[k]})
	}
	return env
}

// MediaEnv is the environment a media or forge server gets from the
// command (mediaEnv, later keys replacing earlier ones), for a server ttis
// runs as a local command instead of a container.
func MediaEnv(spec *catalog.Spec, o Options) map[string]string {
	out := map[string]string{}
	for _, e := range dedupe(mediaEnv(spec, o)) {
		if e.value != "" {
			out[e.key] = e.value
		}
	}
	return out
}

// The C++ server of tt-media-server's image serves the SDXL models on some
// devices (run_docker_server.py lines 47-87); it wants its settings as
// separate variables instead of deriving them from MODEL and DEVICE.
var cppSDXLRunners = map[string]string{
	"stable-diffusion-xl-base-1.0":           "tt_sdxl_generate",
	"stable-diffusion-xl-base-1.0-img-2-img": "tt_sdxl_image_to_image",
	"stable-diffusion-xl-1.0-inpainting-0.1": "tt_sdxl_edit",
}

// cppSDXLDevices is _CPP_SDXL_DEVICE_DEFAULTS: device -> mesh shape,
// IS_GALAXY, DEVICE_IDS (lines 57, 66-77).
var cppSDXLDevices = map[string][3]string{
	"n150":             {"1,1", "false", "(0)"},
	"n300":             {"2,1", "false", "(0)"},
	"t3k":              {"2,1", "false", "(0),(1),(2),(3)"},
	"galaxy":           {"1,1", "true", singleChipGroups(32)},
	"p150":             {"1,1", "false", "(0)"},
	"p300":             {"2,1", "false", "(0,1)"},
	"p300x2":           {"2,1", "false", "(0,1),(2,3)"},
	"p150x4":           {"2,1", "false", "(0,1),(2,3)"},
	"p150x8":           {"2,1", "false", "(0,1),(2,3),(4,5),(6,7)"},
	"blackhole_galaxy": {"1,1", "false", singleChipGroups(32)},
}

func singleChipGroups(n int) string {
	groups := make([]string, n)
	for i := range groups {
		groups[i] = "(" + strconv.Itoa(i) + ")"
	}
	return strings.Join(groups, ",")
}

// IsCppMedia says whether spec runs on tt-media-server's C++ server
// (_is_cpp_media_spec, lines 80-87).
func IsCppMedia(spec *catalog.Spec) bool {
	_, dev := cppSDXLDevices[strings.ToLower(spec.Device)]
	_, model := cppSDXLRunners[spec.ModelName]
	return spec.Engine == engineMedia && dev && model
}

// cppMediaEnv is _get_cpp_media_server_docker_env_vars (lines 90-118).
func cppMediaEnv(spec *catalog.Spec) ([]envVar, bool) {
	if !IsCppMedia(spec) {
		return nil, false
	}
	d := cppSDXLDevices[strings.ToLower(spec.Device)]
	return []envVar{
		{"SERVER_MODE", "cpp"},
		{"MODEL_SERVICE", "image"},
		{"MODEL_RUNNER_TYPE", cppSDXLRunners[spec.ModelName]},
		{"DEVICE_MESH_SHAPE", d[0]},
		{"IS_GALAXY", d[1]},
		{"DEVICE_IDS", d[2]},
		{"MAX_BATCH_SIZE", "1"},
		{"SDXL_IMAGE_RESOLUTION", "1024x1024"},
	}, true
}

// MediaKeyVars are the variables a media or forge container reads its API
// key from: API_KEY, and OPENAI_API_KEY too for the C++ server
// (run_docker_server.py lines 409-417). They belong in the --env-file.
func MediaKeyVars(spec *catalog.Spec) []string {
	if IsCppMedia(spec) {
		return []string{"API_KEY", "OPENAI_API_KEY"}
	}
	return []string{"API_KEY"}
}

// passthroughOverrides is what reaches `vllm serve` through the wrapper's
// passthrough: the unit's vLLM arguments and, when the unit overrides
// override_tt_config, the merged table as additional_config. run.py merges
// --override-tt-config into the spec (model_spec.py lines 882-902) but its
// prod-mode docker command never carries it (only --dev-mode mounts the
// merged spec JSON, run_docker_server.py lines 426-434); sending it as
// --additional-config makes the override reach the server in prod images
// too, since run_vllm_api_server.py's set_vllm_sys_argv lets a passthrough
// flag replace the bundled default of the same name (lines 704-738).
func passthroughOverrides(spec *catalog.Spec, o Options) []kv {
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(o.VllmArgs)) {
		out = append(out, kv{k, o.VllmArgs[k]})
	}
	if len(o.OverrideTTConfig) > 0 {
		merged := MergeTTConfig(spec.OverrideTTConfig, o.OverrideTTConfig)
		out = append(out, kv{"additional_config", PythonJSON(map[string]any{"tt": merged})})
	}
	return out
}

type kv struct {
	key   string
	value any
}

type envVar struct{ key, value string }

func dedupe(env []envVar) []envVar {
	var out []envVar
	at := map[string]int{}
	for _, e := range env {
		if i, ok := at[e.key]; ok {
			out[i] = e
			continue
		}
		at[e.key] = len(out)
		out = append(out, e)
	}
	return out
}

// reservedWrapperFlags are run_vllm_api_server's own flags, which the
// passthrough channel must not carry (run_docker_server.py lines 220-233).
var reservedWrapperFlags = []string{"model", "tt-device", "device", "engine", "impl", "no-auth",
	"disable-trace-capture", "service-port", "port", "host"}

// PassthroughArgs renders vLLM overrides as flags the way
// _vllm_override_cli_args does (run_docker_server.py lines 262-286): "_"
// becomes "-", true a bare flag, false and nil no flag, maps and lists
// Python-style JSON, anything else its text. Unlike run.py, which warns and
// drops them, a reserved wrapper flag is an error: a unit that sets one
// should hear why it has no effect.
func PassthroughArgs(args []kv) ([]string, error) {
	var out []string
	for _, a := range args {
		name := strings.ReplaceAll(a.key, "_", "-")
		if slices.Contains(reservedWrapperFlags, name) {
			return nil, fmt.Errorf("vLLM argument %q is set by the container's wrapper, not passed to vLLM (remove it from [vllm] args)", a.key)
		}
		flag := "--" + name
		switch v := a.value.(type) {
		case nil:
		case bool:
			if v {
				out = append(out, flag)
			}
		case map[string]any, []any:
			out = append(out, flag, PythonJSON(v))
		default:
			out = append(out, flag, pythonStr(v))
		}
	}
	return out, nil
}

// MergeTTConfig merges override over base as model_spec.py's
// apply_overrides does (lines 882-891): a nil value deletes the key.
func MergeTTConfig(base, override map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range override {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// VolumeName is run.py's named cache volume (run_docker_server.py lines
// 187-192); sharing the name lets ttis and run.py reuse one tensor cache.
func VolumeName(spec *catalog.Spec) string {
	return "volume_id_" + spec.Impl + "-" + spec.ModelName
}
