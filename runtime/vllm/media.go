package vllm

import (
	"fmt"
	"maps"
	"net"
	"strconv"

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// The media container path: a unit whose model is a media model (images,
// speech, CNNs, embeddings, video) on the vllm runtime runs the catalog's
// tt-media-server image with the command run.py builds for it
// (runtime/container: no vLLM flags, the spec's environment, MODEL and
// DEVICE, port 8000 inside published on loopback, one --device per claimed
// chip, the 1G hugepages), plus the unit's worker layout (MODEL_RUNNER,
// DEVICE_IDS with the unit's chip ids, DEVICE_MESH_SHAPE, MAX_BATCH_SIZE).
// Unlike the LLM containers (which run --no-auth), tt-media-server always
// checks a key: each start gets a fresh random API_KEY that only the front
// door's proxy knows, passed in the start's --env-file, never in argv.

// mediaLayout is u's tt-media-server worker layout: the catalog's runner,
// mesh and batch size, and the unit's worker groups ([media] device_ids,
// else the catalog's) as host chip ids.
func mediaLayout(u *units.Unit, spec *catalog.Spec) (*container.Media, error) {
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
	return &container.Media{
		Model:        spec.ModelName,
		Device:       u.Device,
		Runner:       runner,
		DeviceIDs:    units.FormatDeviceIDs(groups),
		MeshShape:    fmt.Sprintf("%d,%d", layout.Mesh[0], layout.Mesh[1]),
		MaxBatchSize: layout.MaxBatchSize,
	}, nil
}

// mediaContainerOptions are ContainerOptions for a media unit: with auth
// (the key arrives through the env file), the worker layout, and the
// unit's audio limits under its [vllm] env.
func mediaContainerOptions(u *units.Unit, spec *catalog.Spec, port int, envFile string) (container.Options, error) {
	o := ContainerOptions(u, port, envFile)
	o.NoAuth = false
	layout, err := mediaLayout(u, spec)
	if err != nil {
		return o, err
	}
	o.Media = layout
	env := map[string]string{}
	if s := u.Media.MaxAudioDurationSeconds; s > 0 {
		env["MAX_AUDIO_DURATION_SECONDS"] = strconv.FormatFloat(s, 'f', -1, 64)
	}
	if b := u.Media.MaxAudioSizeBytes; b > 0 {
		env["MAX_AUDIO_SIZE_BYTES"] = strconv.FormatInt(b, 10)
	}
	maps.Copy(env, u.Vllm.Env)
	o.Env = env
	return o, nil
}

// planMedia is PlanWith for a media unit: the container run.py would start
// (runtime/container.Build with the unit's layout), or the unit's [vllm]
// command (with "{port}", "{model}" and "{device}" expanded) given the
// same environment, SERVICE_PORT and the start's secrets.
func planMedia(u *units.Unit, spec *catalog.Spec, port int, po PlanOptions) (*Launch, error) {
	o, err := mediaContainerOptions(u, spec, port, po.EnvFile)
	if err != nil {
		return nil, fmt.Errorf("plan media server for unit %s: %w", u.Name, err)
	}
	l := &Launch{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Model: spec.ModelName}
	if len(u.Vllm.Command) > 0 {
		env := container.MediaEnv(spec, o)
		env["SERVICE_PORT"] = strconv.Itoa(port)
		maps.Copy(env, po.Secrets)
		for _, a := range u.Vllm.Command {
			l.Argv = append(l.Argv, expand(a, port, spec.ModelName, u.Device))
		}
		l.Env = envList(env)
		return l, nil
	}
	p, err := container.Build(spec, o)
	if err != nil {
		return nil, fmt.Errorf("plan media server for unit %s: %w", u.Name, err)
	}
	l.Argv = p.Argv
	return l, nil
}

// mediaKeys are the start's secrets for a media server: a fresh key under
// every variable the server reads it from.
func mediaKeys(spec *catalog.Spec, key string) map[string]string {
	out := map[string]string{}
	for _, k := range container.MediaKeyVars(spec) {
		out[k] = key
	}
	return out
}
