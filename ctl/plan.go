package ctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/container"
	"github.com/ttis-dev/ttis/runtime/host"
	"github.com/ttis-dev/ttis/runtime/vllm"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// defaultUnitsDir is ttisd's default units folder (ttisd.toml units_dir).
const defaultUnitsDir = "/etc/ttis/units"

// planOutput is `ttisctl plan -o json`.
type planOutput struct {
	Unit    string `json:"unit"`
	Runtime string `json:"runtime"`
	Model   string `json:"model"`
	Device  string `json:"device"`
	// Catalog is the catalog mode the spec came from (prod or dev).
	Catalog string   `json:"catalog"`
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
			"A media unit runs tt-media-server with the unit's worker layout (MODEL_RUNNER, DEVICE_IDS, ...)\n" +
			"and a fresh per-start API_KEY only its proxy knows. Secrets never appear: the Hugging Face\n" +
			"token and the API key travel in an env file written at start.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "units-dir", Value: defaultUnitsDir, Usage: "folder of unit files for a UNIT name"},
			devModeFlag("plan with tt-inference-server's development specs, as if the unit said catalog = \"dev\""),
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			u, err := loadUnitArgWith(args[0], c.String("units-dir"), loadOptions(c))
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
			fmt.Fprintf(w, "# unit %s: %s on %s (runtime %s, %s catalog)\n", out.Unit, out.Model, out.Device, out.Runtime, out.Catalog)
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

// detectDevice resolves device = "auto" from this host's boards.
func detectDevice() (string, error) { return host.DetectDevice(context.Background(), host.Env{}) }

// devModeFlag is --dev-mode, the same flag on every command that reads
// the catalog (catalog, plan, doctor).
func devModeFlag(usage string) cli.Flag {
	return &cli.BoolFlag{Name: "dev-mode", Usage: usage}
}

// loadOptions are the unit load options of a command: device detection,
// and --dev-mode's catalog.
func loadOptions(c *cli.Context) units.Options {
	o := units.Options{DetectDevice: detectDevice}
	if c.Bool("dev-mode") {
		o.Catalog = catalog.ModeDev
	}
	return o
}

// loadUnitArgWith loads a unit file given by path, or NAME.toml from dir,
// with load options (loadOptions).
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
	out := &planOutput{Unit: u.Name, Runtime: u.Runtime, Model: u.Model, Device: u.Device, Catalog: catalog.ModeProd}
	if u.Catalog == catalog.ModeDev {
		out.Catalog = catalog.ModeDev
	}
	port := u.Vllm.Port
	if port == 0 {
		port = container.DefaultServicePort
		out.Notes = append(out.Notes, fmt.Sprintf("[vllm] port is not set: the start picks a free loopback port (shown as %d)", port))
	}
	media := u.Spec != nil && u.Spec.IsMedia()
	docker := len(u.Vllm.Command) == 0
	// The start's secrets: the Hugging Face token, and for tt-media-server
	// the fresh key it checks (the front door's proxy sends it).
	var secrets []string
	if media {
		secrets = append(secrets, container.MediaKeyVars(u.Spec)...)
		out.Notes = append(out.Notes, strings.Join(container.MediaKeyVars(u.Spec), " and ")+": a fresh random key per start, known only to the media server and this unit's proxy")
	}
	if u.Vllm.HFTokenFile != "" {
		secrets = append(secrets, "HF_TOKEN")
		out.Notes = append(out.Notes, "HF_TOKEN from "+u.Vllm.HFTokenFile)
	}
	var o vllm.PlanOptions
	if len(secrets) > 0 {
		if docker {
			o.EnvFile = filepath.Join(vllm.RuntimeDir(), "ttis-"+u.Name+"-XXXXXX", "secrets.env")
			out.EnvFile = o.EnvFile
			out.Notes = append(out.Notes, strings.Join(secrets, ", ")+" go in --env-file (mode 0600, removed when the server stops)")
		} else {
			o.Secrets = map[string]string{}
			for _, k := range secrets {
				o.Secrets[k] = container.Redacted
			}
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
		if container.Redact([]string{"-e", kv})[1] != kv || slices.Contains(secrets, k) {
			kv = k + "=" + container.Redacted
		}
		out.Env = append(out.Env, kv)
	}
	if docker {
		out.Image = u.Vllm.Image
		if out.Image == "" {
			out.Image = u.Spec.DockerImage
		}
	}
	if docker && !media {
		out.OverrideTTConfig = container.MergeTTConfig(u.Spec.OverrideTTConfig, nil)
		if len(u.Vllm.OverrideTTConfig) > 0 {
			opts := vllm.ContainerOptions(u, port, "")
			out.OverrideTTConfig = container.MergeTTConfig(u.Spec.OverrideTTConfig, opts.OverrideTTConfig)
		}
	}
	return out, nil
}
