package ctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/runtime/host"
	"github.com/ttis-dev/ttis/runtime/vllm"
	"github.com/ttis-dev/ttis/units"
)

// defaultUnitsDir is ttisd's default units folder (ttisd.toml units_dir).
const defaultUnitsDir = "/etc/ttis/units"

// planOutput is `ttisctl plan -o json`.
type planOutput struct {
	Unit    string   `json:"unit"`
	Runtime string   `json:"runtime"`
	Model   string   `json:"model"`
	Device  string   `json:"device"`
	Image   string   `json:"image,omitempty"`
	Argv    []string `json:"argv"`
	// Command is argv as run.py's --print-docker-cmd formats it.
	Command          string         `json:"command"`
	Env              []string       `json:"env,omitempty"`
	OverrideTTConfig map[string]any `json:"override_tt_config,omitempty"`
	EnvFile          string         `json:"env_file,omitempty"`
	Notes            []string       `json:"notes,omitempty"`
}

// planCommand prints the command a vllm unit's start runs (run.py's
// --print-docker-cmd for a ttis unit), with secrets redacted.
func planCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "print the upstream command (docker run ...) a vllm unit starts, secrets redacted",
		ArgsUsage: "UNIT|UNIT_FILE",
		Description: "UNIT is a file, or a name looked up in --units-dir. The docker command is the one\n" +
			"tt-inference-server's run.py --docker-server --print-docker-cmd builds, with the unit's chips,\n" +
			"mounts and overrides, published on loopback with --no-auth (ttis's front door checks auth).\n" +
			"Secrets never appear: the Hugging Face token travels in an env file written at start.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "units-dir", Value: defaultUnitsDir, Usage: "folder of unit files for a UNIT name"},
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			u, err := loadUnitArg(args[0], c.String("units-dir"))
			if err != nil {
				return err
			}
			out, err := planUnit(u)
			if err != nil {
				return failure(exitError, "%v", err)
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.App.Writer, out)
			}
			w := safeWriter{c.App.Writer}
			fmt.Fprintf(w, "# unit %s: %s on %s (runtime %s)\n", out.Unit, out.Model, out.Device, out.Runtime)
			for _, n := range out.Notes {
				fmt.Fprintf(w, "# %s\n", n)
			}
			for _, e := range out.Env {
				fmt.Fprintf(w, "%s \\\n", e)
			}
			fmt.Fprintln(w, out.Command)
			return nil
		},
	}
}

// loadUnitArg loads a unit file given by path, or NAME.toml from dir,
// resolving device = "auto" from this host's boards.
func loadUnitArg(arg, dir string) (*units.Unit, error) {
	return loadUnitArgWith(arg, dir, units.Options{DetectDevice: func() (string, error) {
		return host.DetectDevice(context.Background(), host.Env{})
	}})
}

// loadUnitArgWith is loadUnitArg with load options.
func loadUnitArgWith(arg, dir string, o units.Options) (*units.Unit, error) {
	path := arg
	if !strings.HasSuffix(arg, ".toml") && !strings.Contains(arg, "/") {
		path = filepath.Join(dir, arg+".toml")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, failure(exitNoUnit, "unit %s: %v (give a unit file, or the name of one in --units-dir)", safe(arg), err)
	}
	u, err := units.LoadWith(path, o)
	if err != nil {
		return nil, failure(exitError, "%v", err)
	}
	return u, nil
}

// planUnit plans u's upstream as its start would, without starting it.
func planUnit(u *units.Unit) (*planOutput, error) {
	if u.Runtime != units.RuntimeVllm {
		return nil, fmt.Errorf("unit %s runs on runtime %s, which starts no upstream command (only vllm units have a plan)", u.Name, u.Runtime)
	}
	out := &planOutput{Unit: u.Name, Runtime: u.Runtime, Model: u.Model, Device: u.Device}
	port := u.Vllm.Port
	if port == 0 {
		port = container.DefaultServicePort
		out.Notes = append(out.Notes, fmt.Sprintf("[vllm] port is not set: the start picks a free loopback port (shown as %d)", port))
	}
	var o vllm.PlanOptions
	if u.Vllm.HFTokenFile != "" {
		if len(u.Vllm.Command) == 0 {
			o.EnvFile = filepath.Join(vllm.RuntimeDir(), "ttis-"+u.Name+"-XXXXXX", "secrets.env")
			out.EnvFile = o.EnvFile
			out.Notes = append(out.Notes, "HF_TOKEN from "+u.Vllm.HFTokenFile+" goes in --env-file (mode 0600, removed when the server stops)")
		} else {
			o.Secrets = map[string]string{"HF_TOKEN": container.Redacted}
		}
	}
	l, err := vllm.PlanWith(u, u.Spec, port, o)
	if err != nil {
		return nil, err
	}
	out.Argv = container.Redact(l.Argv)
	out.Command = container.Format(out.Argv)
	for _, kv := range l.Env {
		k, _, _ := strings.Cut(kv, "=")
		if container.Redact([]string{"-e", kv})[1] != kv || k == "HF_TOKEN" {
			kv = k + "=" + container.Redacted
		}
		out.Env = append(out.Env, kv)
	}
	if len(u.Vllm.Command) == 0 {
		out.Image = u.Vllm.Image
		if out.Image == "" {
			out.Image = u.Spec.DockerImage
		}
		out.OverrideTTConfig = container.MergeTTConfig(u.Spec.OverrideTTConfig, nil)
		if len(u.Vllm.OverrideTTConfig) > 0 {
			opts := vllm.ContainerOptions(u, port, "")
			out.OverrideTTConfig = container.MergeTTConfig(u.Spec.OverrideTTConfig, opts.OverrideTTConfig)
		}
	}
	return out, nil
}
