// Package bench runs benchmark points and sweeps against an
// OpenAI-compatible server: it builds the dataset, drives the load, computes
// vLLM-compatible metrics and renders the result file. The sub-packages do
// one job each (stream parsing, the HTTP client, datasets, load generation,
// metrics, result files, sweep planning, grading, reports).
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/dataset"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// DatasetConfig selects and shapes the prompts.
type DatasetConfig struct {
	// Name is "random", "shared-prefix", "sharegpt" or "custom".
	// shared-prefix is random with PrefixLen tokens shared by every
	// prompt (PrefixLen 0 there means 1,000).
	Name string
	// Path is the file of sharegpt and custom datasets.
	Path string
	// InputLen and OutputLen are the random dataset's ISL and OSL;
	// OutputLen also overrides sharegpt's output length and is custom's
	// default when > 0.
	InputLen, OutputLen int
	RangeRatio          float64
	// PrefixLen is the random dataset's shared prefix (vLLM's
	// --random-prefix-len), in tokens before each prompt's own InputLen.
	PrefixLen int
}

// defaultSharedPrefix is the shared-prefix dataset's prefix when none is
// given: issue 18's prefix-caching workload.
const defaultSharedPrefix = 1000

// PointConfig is one benchmark run.
type PointConfig struct {
	Client      client.Config
	Dataset     DatasetConfig
	NumPrompts  int
	Load        loadgen.Options
	Percentiles []float64
	SLO         metrics.SLO
	Label       string
	// ServerTokenizer uses the server's /tokenize for prompt lengths and
	// for counting output when no usage is sent. Without it lengths are
	// approximate.
	ServerTokenizer bool
	// Simulated marks results of a sim unit.
	Simulated bool
	// FileModel and Device name the result file as run.py does
	// (benchmark_<model>_<device>_<ts>_…): the catalog model (default: the
	// model sent) and the device ("" leaves it out).
	FileModel, Device string
	// Now is the clock for the result's date (time.Now when nil).
	Now func() time.Time
}

// PointResult is one finished run.
type PointResult struct {
	Run      *result.Run
	Summary  metrics.Summary
	JSON     []byte
	FileName string
}

// Failed reports whether any request of the run failed.
func (p *PointResult) Failed() int { return p.Summary.Failed }

// BuildDataset builds the prompts of a point.
// With chat set, random prompts are sized so the server's chat template is
// counted in the ISL.
func BuildDataset(ctx context.Context, tok dataset.Tokenizer, dc DatasetConfig, n int, seed int64, chat bool) (*dataset.Set, error) {
	switch dc.Name {
	case "", "random", "shared-prefix":
		prefix := dc.PrefixLen
		if dc.Name == "shared-prefix" && prefix == 0 {
			prefix = defaultSharedPrefix
		}
		return dataset.Random(ctx, tok, dataset.RandomOptions{
			InputLen: dc.InputLen, OutputLen: dc.OutputLen, RangeRatio: dc.RangeRatio, PrefixLen: prefix, NumPrompts: n, Seed: seed, Chat: chat,
		})
	case "sharegpt":
		return dataset.ShareGPT(ctx, tok, dataset.ShareGPTOptions{Path: dc.Path, NumPrompts: n, OutputLen: dc.OutputLen, Seed: seed})
	case "custom":
		return dataset.Custom(ctx, tok, dataset.CustomOptions{Path: dc.Path, NumPrompts: n, OutputLen: dc.OutputLen, Seed: seed})
	}
	return nil, fmt.Errorf("dataset %q: want random, shared-prefix, sharegpt or custom", dc.Name)
}

// fileModel is the model a point's result file is named after.
func fileModel(pc PointConfig) string {
	if pc.FileModel != "" {
		return pc.FileModel
	}
	return pc.Client.Model
}

// RunPoint builds the dataset, runs the load and renders the result.
// Request failures do not make it return an error; they are counted in the
// result (see PointResult.Failed).
func RunPoint(ctx context.Context, pc PointConfig) (*PointResult, error) {
	if pc.NumPrompts < 1 {
		return nil, fmt.Errorf("number of prompts %d must be at least 1", pc.NumPrompts)
	}
	if len(pc.Percentiles) == 0 {
		pc.Percentiles = []float64{99}
	}
	now := pc.Now
	if now == nil {
		now = time.Now
	}
	conns := max(pc.Load.MaxConcurrency, 1)
	if pc.Load.MaxConcurrency == 0 {
		conns = pc.NumPrompts
	}
	srv, err := pc.Client.Server(conns)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	var tok *openai.Tokenizer
	var dsTok dataset.Tokenizer
	var counter client.TextCounter
	if pc.ServerTokenizer {
		tok = srv.Tokenizer(pc.Client.Model)
		dsTok, counter = tok, tok
	}
	cc := pc.Client
	set, err := BuildDataset(ctx, dsTok, pc.Dataset, pc.NumPrompts, pc.Load.Seed, cc.API == openai.Chat)
	if err != nil {
		return nil, err
	}
	cl, err := client.New(srv, cc, counter)
	if err != nil {
		return nil, err
	}
	date := now()
	out, err := loadgen.Run(ctx, cl, set.Prompts, pc.Load)
	if err != nil {
		return nil, err
	}
	sum := metrics.Compute(out.Requests, out.DurationS, pc.Percentiles, pc.SLO)
	warnings := set.Warnings
	if cc.API == openai.Chat && set.Name != "random" {
		warnings = append(warnings, "chat endpoint: the server's chat template adds tokens around each prompt, so prompt tokens exceed the file's prompt lengths")
	}
	if out.WarmupFailures > 0 {
		warnings = append(warnings, fmt.Sprintf("%d of %d warm-up requests failed", out.WarmupFailures, pc.Load.NumWarmups))
	}
	if tok == nil {
		warnings = append(warnings, "server tokenizer not used")
	}
	if n := srv.StaleRetries(); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d request(s) sent again on a new connection: the server had closed their kept-alive connection before answering (counted per request as retried)", n))
	}
	rate := pc.Load.RequestRate
	if rate == 0 {
		rate = math.Inf(1)
	}
	burst := pc.Load.Burstiness
	if burst == 0 {
		burst = 1
	}
	run := &result.Run{
		Date: date, Backend: cc.API.Backend(), Endpoint: cc.API.Path(), Label: pc.Label,
		ModelID: cc.Model, Tokenizer: set.Tokenizer, Dataset: set.Name, BaseURL: cl.BaseURL(),
		NumPrompts: pc.NumPrompts, ISL: pc.Dataset.InputLen, OSL: pc.Dataset.OutputLen,
		RequestRate: rate, Burstiness: burst, MaxConcurrency: pc.Load.MaxConcurrency,
		IgnoreEOS: cc.IgnoreEOS, SamplingParams: cc.Sampling(), NumWarmups: pc.Load.NumWarmups, Seed: pc.Load.Seed,
		Percentiles: pc.Percentiles, SLO: pc.SLO, Warnings: warnings, Simulated: pc.Simulated,
		Requests: out.Requests, Summary: sum,
	}
	js, err := json.MarshalIndent(result.Build(run), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render result: %w", err)
	}
	return &PointResult{
		Run: run, Summary: sum, JSON: append(js, '\n'),
		FileName: result.FileName(fileModel(pc), pc.Device, date, pc.Dataset.InputLen, pc.Dataset.OutputLen, pc.Load.MaxConcurrency, pc.NumPrompts),
	}, nil
}
