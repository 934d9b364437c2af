// Package vllm is the production runtime: it starts the vLLM/tt-metal server
// for a unit (a local command in a tt-metal environment, or `docker run` with
// the catalog's image), waits for it with a stall timeout, and forwards the
// unit's API traffic to it. The unit's own front door (runtime/serve) keeps
// auth, admission limits, metrics and logs; the upstream server runs without
// auth on a loopback port.
package vllm

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Container paths of tt-inference-server's release images.
const (
	containerHome       = "/home/container_app_user"
	containerCacheRoot  = containerHome + "/cache_root"
	containerWeightsDir = containerHome + "/readonly_weights_mount"
	hugepagesDir        = "/dev/hugepages-1G"
)

// Launch is a fully planned upstream server: what to execute and where it
// will listen.
type Launch struct {
	// Argv is the command line; Argv[0] is looked up in PATH.
	Argv []string
	// Env holds KEY=VALUE additions to the daemon's environment.
	Env []string
	// Addr is the loopback host:port the upstream serves on.
	Addr string
	// Model is the name the upstream serves the model under (the HF repo).
	Model string
}

// Plan builds the launch of u's upstream server on port. A unit with
// [vllm] command runs that command with placeholders expanded:
// "{args}" becomes the vLLM argument list (catalog defaults overridden by
// [vllm] args), "{port}", "{model}" and "{device}" their values. Without a
// command the catalog's docker image runs with the unit's chips, hugepages
// and cache mounts.
func Plan(u *units.Unit, spec *catalog.Spec, port int) (*Launch, error) {
	if spec == nil {
		return nil, fmt.Errorf("plan vllm server for unit %s: no catalog entry for model %q on %s", u.Name, u.Model, u.Device)
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("plan vllm server for unit %s: invalid upstream port %d", u.Name, port)
	}
	env := catalog.Env(spec)
	maps.Copy(env, u.Vllm.Env)
	l := &Launch{
		Addr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Model: spec.HFRepo,
	}
	if len(u.Vllm.Command) > 0 {
		args := catalog.DefaultVllmArgs(spec)
		for k, v := range u.Vllm.Args {
			args[k] = v
		}
		args["port"] = port
		args["host"] = "127.0.0.1"
		flags, err := argFlags(args)
		if err != nil {
			return nil, fmt.Errorf("plan vllm server for unit %s: %w", u.Name, err)
		}
		for _, a := range u.Vllm.Command {
			switch a {
			case "{args}":
				l.Argv = append(l.Argv, flags...)
			default:
				l.Argv = append(l.Argv, expand(a, port, spec.HFRepo, u.Device))
			}
		}
		l.Env = envList(env)
		return l, nil
	}
	l.Argv = dockerArgv(u, spec, port, env)
	return l, nil
}

func expand(s string, port int, model, device string) string {
	return strings.NewReplacer("{port}", strconv.Itoa(port), "{model}", model, "{device}", device).Replace(s)
}

// argFlags turns vLLM arguments into command-line flags in a stable order:
// key "max_model_len" becomes "--max-model-len", true becomes a bare flag,
// false is dropped, and maps and lists are passed as JSON.
func argFlags(args map[string]any) ([]string, error) {
	keys := slices.Sorted(maps.Keys(args))
	var out []string
	for _, k := range keys {
		flag := "--" + strings.ReplaceAll(k, "_", "-")
		switch v := args[k].(type) {
		case bool:
			if v {
				out = append(out, flag)
			}
		case string:
			out = append(out, flag, v)
		case int, int64, float64:
			out = append(out, flag, fmt.Sprint(v))
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("vllm arg %s: %w", k, err)
			}
			out = append(out, flag, string(b))
		}
	}
	return out, nil
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// dockerArgv mirrors tt-inference-server's generated `docker run`, with two
// deliberate differences: the container publishes on loopback only (the
// unit's front door is the public face), and it runs with --no-auth since
// auth is checked in front.
func dockerArgv(u *units.Unit, spec *catalog.Spec, port int, env map[string]string) []string {
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
		"--mount", "type=bind,src="+hugepagesDir+",dst="+hugepagesDir,
		"--publish", fmt.Sprintf("127.0.0.1:%d:%d", port, port))
	if u.Vllm.CacheDir != "" {
		argv = append(argv, "--mount", "type=bind,src="+u.Vllm.CacheDir+",dst="+containerCacheRoot)
	} else {
		argv = append(argv, "--volume", "ttis-cache-"+spec.Impl+"-"+spec.ModelName+":"+containerCacheRoot)
	}
	if u.Vllm.WeightsDir != "" {
		dst := containerWeightsDir + "/" + spec.ModelName
		argv = append(argv, "--mount", "type=bind,src="+u.Vllm.WeightsDir+",dst="+dst+",readonly")
		env = maps.Clone(env)
		env["MODEL_WEIGHTS_DIR"] = dst
	}
	for _, kv := range envList(env) {
		argv = append(argv, "-e", kv)
	}
	argv = append(argv, image, "--model", spec.HFRepo, "--tt-device", u.Device, "--no-auth",
		"--service-port", strconv.Itoa(port))
	// Only the unit's explicit overrides: the image's entrypoint derives the
	// catalog defaults itself from the same model spec.
	overrides := map[string]any{}
	for k, v := range u.Vllm.Args {
		overrides[k] = v
	}
	flags, _ := argFlags(overrides) // string values always marshal
	return append(argv, flags...)
}
