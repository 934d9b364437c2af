package ctl

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/cpu"
)

// modelBenchCommand measures the cpu runtime's forward pass on a GGUF file
// the way llama-bench does, so the numbers compare with llama.cpp's.
func modelBenchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure prompt processing and generation speed of a GGUF model on the cpu runtime",
		ArgsUsage: "PATH",
		Description: "Runs llama-bench's tests without a daemon: ppN evaluates an N-token prompt as one\n" +
			"batch, tgN decodes N tokens one at a time, tgN@B decodes N tokens for each of B\n" +
			"sequences in batched steps (aggregate tokens/s). No sampling; each test is\n" +
			"repeated --reps times after one warm-up run and reported as mean ± stddev.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: cpu.DefaultThreads(), Usage: "compute threads"},
			&cli.IntFlag{Name: "p", Value: 128, Usage: "prompt tokens of the pp test (0 skips it)"},
			&cli.IntFlag{Name: "n", Value: 128, Usage: "generated tokens of the tg tests (0 skips them)"},
			&cli.StringFlag{Name: "batch", Value: "1,8", Usage: "comma-separated sequence counts of the tg tests (tgN@B for B > 1)"},
			&cli.IntFlag{Name: "reps", Aliases: []string{"r"}, Value: 3, Usage: "measured repetitions per test"},
			kvTypeFlag("KV cache element type, as llama-bench's -ctk/-ctv"),
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			for _, a := range args[min(1, len(args)):] {
				if strings.HasPrefix(a, "-") {
					return benchUsage("flag %q after PATH; put flags before PATH", a)
				}
			}
			if len(args) != 1 {
				return benchUsage("want one argument, the GGUF PATH (got %d)", len(args))
			}
			if strings.HasPrefix(args[0], "-") {
				return benchUsage("flag %q where PATH belongs; put flags before PATH", args[0])
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cfg := benchConfig{threads: c.Int("threads"), prompt: c.Int("p"), gen: c.Int("n"), reps: c.Int("reps"), kvType: c.String("kv-type")}
			if err := checkKVTypeFlag(cfg.kvType); err != nil {
				return benchUsage("%v", err)
			}
			if cfg.batches, err = parseBatches(c.String("batch")); err != nil {
				return benchUsage("--batch: %v", err)
			}
			if cfg.threads <= 0 || cfg.prompt < 0 || cfg.gen < 0 || cfg.reps <= 0 {
				return benchUsage("--threads and --reps must be positive, -p and -n not negative")
			}
			rows, err := runModelBench(args[0], cfg)
			if err != nil {
				return failure(exitError, "%v", err)
			}
			if asJSON {
				return writeJSON(c.App.Writer, rows)
			}
			return writeBenchTable(c.App.Writer, rows)
		},
	}
}

// benchUsage is a usage error (exit 2) pointing at this subcommand's help;
// the shared usageError names only the last command word, which here would
// point at the unrelated "ttisctl bench".
func benchUsage(format string, a ...any) error {
	return cli.Exit(fmt.Sprintf("%s (see \"ttisctl model bench --help\")", fmt.Sprintf(format, a...)), exitUsage)
}

type benchConfig struct {
	threads, prompt, gen, reps int
	batches                    []int
	kvType                     string
}

// benchRow is one llama-bench style result line.
type benchRow struct {
	Model        string  `json:"model"`
	SizeBytes    int64   `json:"size_bytes"`
	Type         string  `json:"type"`
	Threads      int     `json:"threads"`
	KVType       string  `json:"kv_type"`
	Test         string  `json:"test"`
	TokensPerSec float64 `json:"tokens_per_second"`
	Stddev       float64 `json:"stddev"`
}

func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 256 {
			return nil, fmt.Errorf("%q is not a sequence count from 1 to 256", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runModelBench(path string, cfg benchConfig) ([]benchRow, error) {
	maxTokens := max(cfg.prompt, 1)
	for _, b := range cfg.batches {
		maxTokens = max(maxTokens, b)
	}
	b, err := cpu.OpenBench(path, cfg.threads, maxTokens, cfg.kvType)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var rows []benchRow
	measure := func(test string, tokens int, run func() (time.Duration, error)) error {
		if _, err := run(); err != nil { // warm-up: page in the weights
			return fmt.Errorf("%s: %w", test, err)
		}
		rates := make([]float64, cfg.reps)
		for i := range rates {
			d, err := run()
			if err != nil {
				return fmt.Errorf("%s: %w", test, err)
			}
			rates[i] = float64(tokens) / d.Seconds()
		}
		mean, sd := meanStddev(rates)
		rows = append(rows, benchRow{Model: b.Name(), SizeBytes: b.SizeBytes(), Type: b.Type(), Threads: b.Threads(), KVType: b.KVCacheType(), Test: test, TokensPerSec: mean, Stddev: sd})
		return nil
	}
	if cfg.prompt > 0 {
		if err := measure(fmt.Sprintf("pp%d", cfg.prompt), cfg.prompt, func() (time.Duration, error) { return b.Prompt(cfg.prompt) }); err != nil {
			return nil, err
		}
	}
	if cfg.gen > 0 {
		for _, seqs := range cfg.batches {
			test := fmt.Sprintf("tg%d", cfg.gen)
			if seqs > 1 {
				test += fmt.Sprintf("@%d", seqs)
			}
			if err := measure(test, cfg.gen*seqs, func() (time.Duration, error) { return b.Generate(cfg.gen, seqs) }); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

func meanStddev(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// writeBenchTable prints right-aligned columns. It pads by runes, not
// bytes (text/tabwriter counts the two bytes of "±" as two columns).
func writeBenchTable(w io.Writer, rows []benchRow) error {
	table := [][]string{{"model", "size", "type", "threads", "kv", "test", "t/s"}}
	for _, r := range rows {
		table = append(table, []string{r.Model, humanBytes(r.SizeBytes), r.Type, strconv.Itoa(r.Threads), r.KVType, r.Test,
			fmt.Sprintf("%.2f ± %.2f", r.TokensPerSec, r.Stddev)})
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, row := range table {
		for i, cell := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)))
			b.WriteString(cell)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
