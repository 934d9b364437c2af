package ctl

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// modelCommand groups the model file workflows; today that is creating
// synthetic models for demos and benchmarks of the cpu runtime.
func modelCommand() *cli.Command {
	return &cli.Command{
		Name:  "model",
		Usage: "work with GGUF model files for the cpu runtime",
		Subcommands: []*cli.Command{
			modelCreateCommand(),
			modelBenchCommand(),
		},
	}
}

func modelCreateCommand() *cli.Command {
	var presetNames []string
	for _, p := range synth.Presets() {
		presetNames = append(presetNames, p.Name)
	}
	return &cli.Command{
		Name:      "create",
		Usage:     "write a synthetic Llama GGUF model with seeded random weights (no download needed)",
		ArgsUsage: "PATH",
		Description: "The weights are random, so the model's text is noise, but its shapes, tensor\n" +
			"types and compute are those of a real Llama model of the preset's size, and its\n" +
			"SentencePiece-style vocabulary tokenizes English sensibly. The same --seed gives\n" +
			"the same file. Presets: " + presetSummary() + ".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Value: "tiny", Usage: "model shape: " + strings.Join(presetNames, ", ")},
			&cli.StringFlag{Name: "type", Value: "f32", Usage: "type of the weight matrices: " + strings.Join(synth.Types(), ", ")},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the random weights"},
			&cli.StringFlag{Name: "name", Usage: "general.name of the model (default ttis-synthetic-PRESET)"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite PATH if it exists"},
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			path := args[0]
			preset, err := synth.LookupPreset(c.String("preset"))
			if err != nil {
				return usageError(c, "--preset: %v", err)
			}
			typ, err := synth.ParseType(c.String("type"))
			if err != nil {
				return usageError(c, "--type: %v", err)
			}
			if _, err := os.Stat(path); err == nil && !c.Bool("force") {
				return cli.Exit(fmt.Sprintf("model create: %s exists (use --force to overwrite)", path), exitError)
			}
			start := time.Now()
			opts := synth.Options{Preset: preset.Name, Type: typ, Seed: c.Uint64("seed"), Name: c.String("name")}
			if err := synth.Create(path, opts); err != nil {
				return cli.Exit(err.Error(), exitError)
			}
			st, err := os.Stat(path)
			if err != nil {
				return cli.Exit(fmt.Sprintf("model create: %v", err), exitError)
			}
			fmt.Fprintf(c.App.Writer, "wrote %s: preset %s, %s weights, %.1fM parameters, %s, seed %d, in %s\n",
				path, preset.Name, strings.ToLower(typ.String()), float64(preset.Params())/1e6,
				humanBytes(st.Size()), opts.Seed, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}

func presetSummary() string {
	var parts []string
	for _, p := range synth.Presets() {
		parts = append(parts, fmt.Sprintf("%s (dim %d, %d layers, %d/%d heads, ffn %d, vocab %d, ctx %d)",
			p.Name, p.Dim, p.Layers, p.Heads, p.KVHeads, p.FFN, p.Vocab, p.Context))
	}
	return strings.Join(parts, "; ")
}

func humanBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/math.Pow(2, 20))
}
