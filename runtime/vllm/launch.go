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

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
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

// PlanOptions are what a start adds to a unit's plan.
type PlanOptions struct {
	// EnvFile is the docker --env-file holding the start's secrets (the
	// Hugging Face token, a media server's API key); empty passes none.
	EnvFile string
	// Secrets are added to a local command's environment (never to argv).
	Secrets map[string]string
}

// Plan builds the launch of u's upstream server on port. A unit with
// [vllm] command runs that command with placeholders expanded:
// "{args}" becomes the vLLM argument list (catalog defaults overridden by
// [vllm] args and override_tt_config), "{port}", "{model}" and "{device}"
// their values. Without a command the catalog's docker image runs with the
// command tt-inference-server's run.py would build (runtime/container),
// with the unit's chips, mounts and overrides.
func Plan(u *units.Unit, spec *catalog.Spec, port int) (*Launch, error) {
	return PlanWith(u, spec, port, PlanOptions{})
}

// PlanWith is Plan with the start's env file and secrets.
func PlanWith(u *units.Unit, spec *catalog.Spec, port int, o PlanOptions) (*Launch, error) {
	if spec == nil {
		return nil, fmt.Errorf("plan vllm server for unit %s: no catalog entry for model %q on %s", u.Name, u.Model, u.Device)
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("plan vllm server for unit %s: invalid upstream port %d", u.Name, port)
	}
	if spec.IsMedia() {
		return planMedia(u, spec, port, o) // tt-media-server, not vLLM (media.go)
	}
	l := &Launch{
		Addr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Model: spec.HFRepo,
	}
	if len(u.Vllm.Command) > 0 {
		env := catalog.Env(spec)
		maps.Copy(env, u.Vllm.Env)
		maps.Copy(env, o.Secrets)
		args := catalog.DefaultVllmArgs(spec)
		for k, v := range u.Vllm.Args {
			args[k] = v
		}
		if len(u.Vllm.OverrideTTConfig) > 0 {
			merged := container.MergeTTConfig(spec.OverrideTTConfig, ttOverrides(u))
			args["additional_config"] = container.PythonJSON(map[string]any{"tt": merged})
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
	p, err := container.Build(spec, ContainerOptions(u, port, o.EnvFile))
	if err != nil {
		return nil, fmt.Errorf("plan vllm server for unit %s: %w", u.Name, err)
	}
	l.Argv = p.Argv
	return l, nil
}

// ContainerOptions are run.py's flags for u's container, with three
// deliberate differences from run.py's defaults: the container publishes
// on loopback only and runs with --no-auth (the unit's front door is the
// public face and checks auth), and it is named after the unit so that an
// orphan can be found and stopped.
func ContainerOptions(u *units.Unit, port int, envFile string) container.Options {
	args := make(map[string]any, len(u.Vllm.Args))
	for k, v := range u.Vllm.Args {
		args[k] = v
	}
	return container.Options{
		Name:                "ttis-" + u.Name,
		EnvFile:             envFile,
		DeviceIDs:           u.Chips,
		BindHost:            "127.0.0.1",
		ServicePort:         port,
		HostVolume:          u.Vllm.CacheDir,
		HostWeightsDir:      u.Vllm.WeightsDir,
		NoAuth:              true,
		DisableTraceCapture: !u.Vllm.TraceCaptureOn(),
		Image:               u.Vllm.Image,
		OverrideTTConfig:    ttOverrides(u),
		VllmArgs:            args,
		Env:                 u.Vllm.Env,
	}
}

// ttOverrides is the unit's override_tt_config with "" meaning "delete the
// catalog's key" (TOML has no null).
func ttOverrides(u *units.Unit) map[string]any {
	if len(u.Vllm.OverrideTTConfig) == 0 {
		return nil
	}
	out := make(map[string]any, len(u.Vllm.OverrideTTConfig))
	for k, v := range u.Vllm.OverrideTTConfig {
		if s, ok := v.(string); ok && s == "" {
			out[k] = nil
			continue
		}
		out[k] = v
	}
	return out
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
