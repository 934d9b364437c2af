package vllm

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// The media container path: a unit whose model is a media model (images,
// speech, CNNs, embeddings, video) on the vllm runtime runs the catalog's
// tt-media-server image the way tt-inference-server's run.py starts it:
// no vLLM flags, the model chosen by MODEL, DEVICE and MODEL_RUNNER, the
// workers' chips by DEVICE_IDS, the server on port 8000 inside the
// container (published on loopback), one --device per claimed chip and the
// 1G hugepages mounted. Unlike the LLM containers (which run --no-auth),
// tt-media-server always checks a key: each start gets a fresh random
// API_KEY that only the front door's proxy knows.

// mediaContainerPort is tt-media-server's SERVICE_PORT inside its image.
const mediaContainerPort = 8000

// MediaEnv is the environment tt-media-server reads for a unit: the
// spec's env, then MODEL, DEVICE, MODEL_RUNNER, the worker layout
// (DEVICE_IDS with the unit's chip ids, DEVICE_MESH_SHAPE, MAX_BATCH_SIZE)
// and the cache paths, then the unit's [vllm] env over all of it.
func MediaEnv(u *units.Unit, spec *catalog.Spec, apiKey string) (map[string]string, error) {
	runner, err := catalog.MediaRunner(spec)
	if err != nil {
		return nil, err
	}
	layout, err := catalog.MediaLayout(spec)
	if err != nil {
		return nil, err
	}
	uu := *u
	uu.Spec = spec
	groups, err := uu.MediaWorkers()
	if err != nil {
		return nil, fmt.Errorf("media.device_ids: %w", err)
	}
	// Worker groups name positions in the unit's chip list; the container
	// sees the host's /dev/tenstorrent/N, so DEVICE_IDS carries the ids.
	if len(u.Chips) > 0 {
		for gi, g := range groups {
			mapped := make([]int, len(g))
			for i, pos := range g {
				if pos >= len(u.Chips) {
					return nil, fmt.Errorf("media.device_ids: worker %d uses chip position %d, but the unit claims %d chips", gi+1, pos, len(u.Chips))
				}
				mapped[i] = u.Chips[pos]
			}
			groups[gi] = mapped
		}
	}
	env := catalog.Env(spec)
	if env == nil {
		env = map[string]string{}
	}
	env["MODEL"] = spec.ModelName
	env["DEVICE"] = u.Device
	env["MODEL_RUNNER"] = runner
	env["DEVICE_IDS"] = units.FormatDeviceIDs(groups)
	env["DEVICE_MESH_SHAPE"] = fmt.Sprintf("%d,%d", layout.Mesh[0], layout.Mesh[1])
	if layout.MaxBatchSize > 0 {
		env["MAX_BATCH_SIZE"] = strconv.Itoa(layout.MaxBatchSize)
	}
	env["CACHE_ROOT"] = container.ContainerCacheRoot
	env["HF_HOME"] = container.ContainerCacheRoot + "/huggingface"
	env["API_KEY"] = apiKey
	if s := u.Media.MaxAudioDurationSeconds; s > 0 {
		env["MAX_AUDIO_DURATION_SECONDS"] = strconv.FormatFloat(s, 'f', -1, 64)
	}
	if b := u.Media.MaxAudioSizeBytes; b > 0 {
		env["MAX_AUDIO_SIZE_BYTES"] = strconv.FormatInt(b, 10)
	}
	maps.Copy(env, u.Vllm.Env)
	return env, nil
}

// PlanMedia builds the launch of a media unit's tt-media-server on the
// loopback port: `docker run` of the catalog's image, or the unit's [vllm]
// command (with "{port}", "{model}" and "{device}" expanded and
// SERVICE_PORT set) for a server run outside a container.
func PlanMedia(u *units.Unit, spec *catalog.Spec, port int, apiKey string) (*Launch, error) {
	if spec == nil || !spec.IsMedia() {
		return nil, fmt.Errorf("plan media server for unit %s: %s is not a media model", u.Name, u.Model)
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("plan media server for unit %s: invalid upstream port %d", u.Name, port)
	}
	env, err := MediaEnv(u, spec, apiKey)
	if err != nil {
		return nil, fmt.Errorf("plan media server for unit %s: %w", u.Name, err)
	}
	l := &Launch{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Model: spec.ModelName}
	if len(u.Vllm.Command) > 0 {
		env["SERVICE_PORT"] = strconv.Itoa(port)
		for _, a := range u.Vllm.Command {
			l.Argv = append(l.Argv, expand(a, port, spec.ModelName, u.Device))
		}
		l.Env = envList(env)
		return l, nil
	}
	image := u.Vllm.Image
	if image == "" {
		image = catalog.DockerImage(spec)
	}
	argv := []string{"docker", "run", "--rm", "--name", "ttis-" + u.Name, "--ipc", "host"}
	if len(u.Chips) == 0 {
		argv = append(argv, "--device", "/dev/tenstorrent:/dev/tenstorrent")
	}
	for _, c := range u.Chips {
		d := "/dev/tenstorrent/" + strconv.Itoa(c)
		argv = append(argv, "--device", d+":"+d)
	}
	argv = append(argv,
		"--mount", "type=bind,src="+container.HugepagesDir+",dst="+container.HugepagesDir,
		"--publish", fmt.Sprintf("127.0.0.1:%d:%d", port, mediaContainerPort))
	if u.Vllm.CacheDir != "" {
		argv = append(argv, "--mount", "type=bind,src="+u.Vllm.CacheDir+",dst="+container.ContainerCacheRoot)
	} else {
		argv = append(argv, "--volume", "ttis-cache-"+spec.Impl+"-"+spec.ModelName+":"+container.ContainerCacheRoot)
	}
	if u.Vllm.WeightsDir != "" {
		dst := container.ContainerReadonlyMounts + "/" + spec.ModelName
		argv = append(argv, "--mount", "type=bind,src="+u.Vllm.WeightsDir+",dst="+dst+",readonly")
		env["MODEL_WEIGHTS_PATH"] = dst
	}
	for _, kv := range envList(env) {
		argv = append(argv, "-e", kv)
	}
	l.Argv = append(argv, image)
	return l, nil
}

// OpenMedia is Open for a media unit: it starts tt-media-server (see
// PlanMedia), waits for its /health, and proxies to it with the start's
// API key.
func OpenMedia(ctx context.Context, u *units.Unit, log *slog.Logger) (*Server, error) {
	spec, err := catalog.Lookup(u.Model, u.Device)
	if err != nil {
		return nil, fmt.Errorf("open media runtime for unit %s: %w", u.Name, err)
	}
	port := u.Vllm.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("open media runtime for unit %s: %w", u.Name, err)
		}
	}
	key := "ttis-" + rand.Text()
	l, err := PlanMedia(u, spec, port, key)
	if err != nil {
		return nil, err
	}
	log = log.With("upstream", l.Argv[0])
	// The argv carries the key; log it without.
	log.Info("starting media server", "runner", envValue(l, "MODEL_RUNNER"), "device_ids", envValue(l, "DEVICE_IDS"), "addr", l.Addr)
	up, err := Start(l, log)
	if err != nil {
		return nil, fmt.Errorf("open media runtime for unit %s: %w", u.Name, err)
	}
	stall := u.Vllm.StallTimeout.Duration
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	if err := up.WaitReady(ctx, stall, healthPoll); err != nil {
		up.Stop(stopTimeout)
		return nil, fmt.Errorf("open media runtime for unit %s: %w", u.Name, err)
	}
	log.Info("media server ready", "pid", up.Pid())
	p := NewProxy(l.Addr, DefaultIdleTimeout)
	p.Authorization = "Bearer " + key
	return &Server{Proxy: p, up: up, launch: l}, nil
}

// envValue finds KEY's value among a launch's "-e KEY=VALUE" arguments or
// its environment.
func envValue(l *Launch, key string) string {
	for _, list := range [][]string{l.Argv, l.Env} {
		for _, a := range list {
			if len(a) > len(key) && a[:len(key)+1] == key+"=" {
				return a[len(key)+1:]
			}
		}
	}
	return ""
}
