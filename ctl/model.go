package ctl

import (
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/cpu"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/runtime/cpu/tokenizer"
)

// modelCommand groups the model file workflows: creating synthetic models
// for demos and benchmarks of the cpu runtime, benchmarking and inspecting
// GGUF files, and pulling a catalog model's weights from the Hub.
func modelCommand() *cli.Command {
	return &cli.Command{
		Name:  "model",
		Usage: "work with GGUF model files for the cpu runtime",
		Subcommands: []*cli.Command{
			modelCreateCommand(),
			modelBenchCommand(),
			modelInfoCommand(),
			modelPullCommand(),
		},
	}
}

func modelCreateCommand() *cli.Command {
	var presetNames, presets []string
	for _, p := range synth.Presets() {
		presetNames = append(presetNames, fmt.Sprintf("%s (ctx %d)", p.Name, p.Context))
		presets = append(presets, p.Name)
	}
	return &cli.Command{
		Name:      "create",
		Usage:     "write a synthetic Llama GGUF model with seeded random weights (no download needed)",
		ArgsUsage: "PATH",
		Description: "The weights are random, so the model's text is noise, but its shapes, tensor\n" +
			"types and compute are those of a real Llama model of the preset's size, and its\n" +
			"SentencePiece-style vocabulary tokenizes English sensibly. The same --seed gives\n" +
			"the same file. Presets (ctx: the context length in tokens, which holds the\n" +
			"chat template with tools and a short exchange): " + presetSummary() + ".",
		Flags: []cli.Flag{
			choice(&cli.StringFlag{Name: "preset", Value: "tiny", Usage: "model shape: " + strings.Join(presetNames, ", ")}, presets...),
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
				return failure(exitError, "%s exists (use --force to overwrite)", path)
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			start := time.Now()
			opts := synth.Options{Preset: preset.Name, Type: typ, Seed: c.Uint64("seed"), Name: c.String("name")}
			fallbacks, matrices, err := synth.Fallbacks(opts)
			if err != nil {
				return cli.Exit(err.Error(), exitError)
			}
			if err := synth.Create(path, opts); err != nil {
				return cli.Exit(err.Error(), exitError)
			}
			st, err := os.Stat(path)
			if err != nil {
				return failure(exitError, "%v", err)
			}
			if asJSON {
				out := createdModel{Path: path, Preset: preset.Name, Type: strings.ToLower(typ.String()),
					Parameters: preset.Params(), Bytes: st.Size(), Seed: opts.Seed, Matrices: matrices,
					Fallbacks: []createdFallback{}}
				for _, f := range fallbacks {
					out.Fallbacks = append(out.Fallbacks, createdFallback{Tensor: f.Tensor, Cols: f.Cols, Type: f.Got.String()})
				}
				return writeJSON(c.App.Writer, out)
			}
			fmt.Fprintf(c.App.Writer, "wrote %s: preset %s, %s weights, %.1fM parameters, %s, seed %d, in %s\n",
				path, preset.Name, strings.ToLower(typ.String()), float64(preset.Params())/1e6,
				humanBytes(st.Size()), opts.Seed, time.Since(start).Round(time.Millisecond))
			printFallbacks(c.App.Writer, typ, fallbacks, matrices)
			return nil
		},
	}
}

// createdModel is model create's -o json output.
type createdModel struct {
	Path       string            `json:"path"`
	Preset     string            `json:"preset"`
	Type       string            `json:"type"`
	Parameters int64             `json:"parameters"`
	Bytes      int64             `json:"bytes"`
	Seed       uint64            `json:"seed"`
	Matrices   int               `json:"matrices"`
	Fallbacks  []createdFallback `json:"fallbacks"`
}

// createdFallback is a matrix stored in another type than --type.
type createdFallback struct {
	Tensor string `json:"tensor"`
	Cols   int    `json:"cols"`
	Type   string `json:"type"`
}

// printFallbacks says which matrices were stored in another type than
// asked, as llama-quantize warns: grouped by row length and type, with the
// layer number of per-layer names folded ("blk.*.attn_q.weight").
func printFallbacks(w io.Writer, want gguf.TensorType, fallbacks []synth.Fallback, matrices int) {
	if len(fallbacks) == 0 {
		return
	}
	type group struct {
		cols int
		got  gguf.TensorType
	}
	var order []group
	names := map[group][]string{}
	for _, f := range fallbacks {
		g := group{f.Cols, f.Got}
		if _, ok := names[g]; !ok {
			order = append(order, g)
		}
		name := blockIndex.ReplaceAllString(f.Tensor, "blk.*.")
		if !slices.Contains(names[g], name) {
			names[g] = append(names[g], name)
		}
	}
	fmt.Fprintf(w, "fallback: %d of %d matrices are not stored as %s (rows not a whole number of its %d-element blocks; llama-quantize's fallback rule):\n",
		len(fallbacks), matrices, want, want.BlockSize())
	for _, g := range order {
		fmt.Fprintf(w, "  %s for rows of %d: %s\n", g.got, g.cols, strings.Join(names[g], ", "))
	}
}

// blockIndex matches the layer number of a per-layer tensor name.
var blockIndex = regexp.MustCompile(`^blk\.[0-9]+\.`)

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

// modelInfo is what `ttisctl model info` reports about a GGUF file.
type modelInfo struct {
	Path         string            `json:"path"`
	Bytes        int64             `json:"bytes"`
	Version      uint32            `json:"gguf_version"`
	Alignment    int               `json:"alignment"`
	Name         string            `json:"name,omitempty"`
	Architecture string            `json:"architecture"`
	Parameters   int64             `json:"parameters"`
	Tensors      int               `json:"tensors"`
	TensorTypes  map[string]int    `json:"tensor_types"`
	Tokenizer    *tokenizerInfo    `json:"tokenizer,omitempty"`
	TokenizerErr string            `json:"tokenizer_error,omitempty"`
	KVCache      *kvCacheInfo      `json:"kv_cache,omitempty"`
	Metadata     map[string]string `json:"metadata"`
	keys         []string
}

// kvCacheInfo is the key/value cache the cpu runtime would hold for this
// file: keys and values of type Type ("f16", the default, or "f32") per
// position, one cache per slot growing up to the context window.
type kvCacheInfo struct {
	Type          string `json:"type"`
	BytesPerToken int64  `json:"bytes_per_token"`
	Context       int    `json:"context"`
	Slots         int    `json:"slots"`
	MaxBytes      int64  `json:"max_bytes"`
}

type tokenizerInfo struct {
	Model        string `json:"model"`
	Vocab        int    `json:"vocab_size"`
	BOS          int    `json:"bos"`
	EOS          []int  `json:"eos"`
	ChatTemplate string `json:"chat_template"`
}

func modelInfoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "show a GGUF file's metadata, tensor types, KV cache size and tokenizer (validates the file)",
		ArgsUsage: "PATH",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "context", Usage: "context window the KV cache line assumes, as a unit's limits.max_context (0: the model's)"},
			&cli.IntFlag{Name: "slots", Value: cpu.DefaultMaxSeqs, Usage: "concurrent sequences the KV cache line assumes, as a unit's limits.max_concurrency"},
			kvTypeFlag("KV cache element type the KV cache line assumes, as a unit's [cpu] kv_cache_type"),
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			if c.Int("context") < 0 || c.Int("slots") < 1 {
				return usageError(c, "--context must not be negative and --slots must be at least 1")
			}
			if err := checkKVTypeFlag(c.String("kv-type")); err != nil {
				return usageError(c, "%v", err)
			}
			info, err := readModelInfo(args[0], c.Int("context"), c.Int("slots"), c.String("kv-type"))
			if err != nil {
				return cli.Exit(err.Error(), exitError)
			}
			if asJSON {
				return writeJSON(c.App.Writer, info)
			}
			printModelInfo(c.App.Writer, info)
			return nil
		},
	}
}

// readModelInfo reads what model info shows; context (0: the model's) and
// slots size the KV cache line as a unit's limits would.
func readModelInfo(path string, context, slots int, kvType string) (*modelInfo, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model info: %w", err)
	}
	info := &modelInfo{
		Path: path, Bytes: st.Size(), Version: f.Version, Alignment: f.Alignment,
		Architecture: f.Architecture(), Tensors: len(f.Tensors),
		TensorTypes: map[string]int{}, Metadata: map[string]string{},
	}
	info.Name, _ = f.String("general.name")
	for _, t := range f.Tensors {
		info.Parameters += int64(t.Elements())
		info.TensorTypes[t.Type.String()]++
	}
	for _, kv := range f.KV {
		info.keys = append(info.keys, kv.Key)
		info.Metadata[kv.Key] = describeValue(kv.Value)
	}
	if perToken, trained, err := cpu.KVCacheShape(f, kvType); err == nil {
		ctx := trained
		if context > 0 && context < trained {
			ctx = context
		}
		info.KVCache = &kvCacheInfo{Type: kvType, BytesPerToken: perToken, Context: ctx, Slots: slots, MaxBytes: cpu.KVCacheBytes(perToken, ctx, slots)}
	}
	tk, err := tokenizer.New(f)
	if err != nil {
		info.TokenizerErr = err.Error()
		return info, nil
	}
	ct := tk.ChatTemplate()
	chat := "GGUF tokenizer.chat_template"
	switch {
	case ct.ParseError != nil:
		chat = fmt.Sprintf("built-in %s format (tokenizer.chat_template does not parse: %v)", ct.Family, ct.ParseError)
	case ct.Builtin:
		chat = fmt.Sprintf("built-in %s format (no tokenizer.chat_template)", ct.Family)
	}
	info.Tokenizer = &tokenizerInfo{Model: string(tk.Model()), Vocab: tk.VocabSize(), BOS: tk.BOS(), EOS: tk.EOS(), ChatTemplate: chat}
	return info, nil
}

// describeValue renders a metadata value on one line: arrays as their
// element type and length with the first few elements, long strings cut.
func describeValue(v any) string {
	const maxLen = 80
	cut := func(s string) string {
		if len(s) > maxLen {
			return s[:maxLen] + "…"
		}
		return s
	}
	if s, ok := v.(string); ok {
		return cut(fmt.Sprintf("%q", s))
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return fmt.Sprintf("%v", v)
	}
	var head []string
	for i := 0; i < rv.Len() && i < 5; i++ {
		head = append(head, fmt.Sprintf("%#v", rv.Index(i).Interface()))
	}
	if rv.Len() > 5 {
		head = append(head, "…")
	}
	return cut(fmt.Sprintf("%s[%d] %s", rv.Type().Elem(), rv.Len(), strings.Join(head, " ")))
}

func printModelInfo(w io.Writer, info *modelInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s (%s, GGUF v%d, alignment %d)\n", info.Path, humanBytes(info.Bytes), info.Version, info.Alignment)
	if info.Name != "" {
		fmt.Fprintf(tw, "name\t%s\n", info.Name)
	}
	fmt.Fprintf(tw, "architecture\t%s\n", info.Architecture)
	var types []string
	for t, n := range info.TensorTypes {
		types = append(types, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(types)
	fmt.Fprintf(tw, "parameters\t%.2fM in %d tensors (%s)\n", float64(info.Parameters)/1e6, info.Tensors, strings.Join(types, ", "))
	if kv := info.KVCache; kv != nil {
		fmt.Fprintf(tw, "kv cache\t%s per token (%s keys and values on the cpu runtime); at most %s for %d slots of %d tokens\n",
			humanBytes(kv.BytesPerToken), strings.ToUpper(kv.Type), humanBytes(kv.MaxBytes), kv.Slots, kv.Context)
	}
	if tk := info.Tokenizer; tk != nil {
		fmt.Fprintf(tw, "tokenizer\t%s, %d tokens, BOS %d, EOS %v\n", tk.Model, tk.Vocab, tk.BOS, tk.EOS)
		fmt.Fprintf(tw, "chat\t%s\n", tk.ChatTemplate)
	} else {
		fmt.Fprintf(tw, "tokenizer\tunusable: %s\n", info.TokenizerErr)
	}
	tw.Flush()
	fmt.Fprintln(w, "metadata:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range info.keys {
		fmt.Fprintf(tw, "  %s\t%s\n", k, info.Metadata[k])
	}
	tw.Flush()
}
