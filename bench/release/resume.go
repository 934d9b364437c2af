package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// ConfigFile is the run's plan, kept so that an interrupted run can be
// finished: what was asked, never the credentials.
const ConfigFile = "config.json"

// MaxPlanBytes bounds the plan read back on resume: ours hold a few
// kilobytes.
const MaxPlanBytes = 1 << 20

// TargetRef is what a run remembers of its server, to find it again on
// resume (the credentials are resolved anew).
type TargetRef struct {
	Unit         string `json:"unit"`
	BaseURL      string `json:"base_url"`
	Model        string `json:"model"`
	CatalogModel string `json:"catalog_model"`
	Device       string `json:"device,omitempty"`
	// Catalog is the catalog mode that graded the run ("dev"; empty for
	// prod), so that a resume grades against the same one.
	Catalog string `json:"catalog,omitempty"`
}

// CatalogMode is the catalog the run graded with: a plan that names none
// was graded with prod (runs from before dev catalogs included).
func (r TargetRef) CatalogMode() string {
	if r.Catalog == catalog.ModeDev {
		return catalog.ModeDev
	}
	return catalog.ModeProd
}

// saved is config.json.
type saved struct {
	Target         TargetRef            `json:"target"`
	Workflow       string               `json:"workflow"`
	Limit          limit.Mode           `json:"limit"`
	Point          bool                 `json:"point,omitempty"`
	TargetsOnly    bool                 `json:"targets_only,omitempty"`
	Targets        []catalog.PerfTarget `json:"targets,omitempty"`
	TargetsSource  string               `json:"targets_source,omitempty"`
	NumPrompts     int                  `json:"num_prompts,omitempty"`
	MaxConcurrency int                  `json:"max_concurrency,omitempty"`
	// NoTraceCapture is kept so that the points a resume measures are
	// warmed up (or not) like the ones measured before the interruption.
	NoTraceCapture bool             `json:"no_trace_capture,omitempty"`
	Bench          *savedBench      `json:"bench,omitempty"`
	Evals          *workflow.Config `json:"evals,omitempty"`
	// Tests are the command line's spec-test overrides, kept so a resume
	// tests as the run began to.
	Tests *units.Tests `json:"tests,omitempty"`
}

// savedBench is a benchmark template without its functions and headers;
// rates are strings because JSON has no infinity.
type savedBench struct {
	API             openai.API          `json:"api"`
	IgnoreEOS       bool                `json:"ignore_eos"`
	ContinuousUsage bool                `json:"continuous_usage"`
	ExtraBody       map[string]any      `json:"extra_body,omitempty"`
	RequestTimeout  time.Duration       `json:"request_timeout"`
	Dataset         bench.DatasetConfig `json:"dataset"`
	NumPrompts      int                 `json:"num_prompts"`
	MaxConcurrency  int                 `json:"max_concurrency"`
	RequestRate     string              `json:"request_rate"`
	Burstiness      string              `json:"burstiness"`
	NumWarmups      int                 `json:"num_warmups"`
	Seed            int64               `json:"seed"`
	RequestIDPrefix string              `json:"request_id_prefix,omitempty"`
	Percentiles     []float64           `json:"percentiles"`
	SLO             metrics.SLO         `json:"slo"`
	Label           string              `json:"label,omitempty"`
	ServerTokenizer bool                `json:"server_tokenizer"`
}

func saveBench(pc *bench.PointConfig) *savedBench {
	if pc == nil {
		return nil
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return &savedBench{API: pc.Client.API, IgnoreEOS: pc.Client.IgnoreEOS, ContinuousUsage: pc.Client.ContinuousUsage,
		ExtraBody: pc.Client.ExtraBody, RequestTimeout: pc.Client.RequestTimeout, Dataset: pc.Dataset, NumPrompts: pc.NumPrompts,
		MaxConcurrency: pc.Load.MaxConcurrency, RequestRate: f(pc.Load.RequestRate), Burstiness: f(pc.Load.Burstiness),
		NumWarmups: pc.Load.NumWarmups, Seed: pc.Load.Seed, RequestIDPrefix: pc.Load.RequestIDPrefix,
		Percentiles: pc.Percentiles, SLO: pc.SLO, Label: pc.Label, ServerTokenizer: pc.ServerTokenizer}
}

func (b *savedBench) point() (*bench.PointConfig, error) {
	rate, err := strconv.ParseFloat(b.RequestRate, 64)
	if err != nil {
		return nil, fmt.Errorf("bench.request_rate: %w", err)
	}
	burst, err := strconv.ParseFloat(b.Burstiness, 64)
	if err != nil {
		return nil, fmt.Errorf("bench.burstiness: %w", err)
	}
	return &bench.PointConfig{
		Client: client.Config{API: b.API, IgnoreEOS: b.IgnoreEOS, ContinuousUsage: b.ContinuousUsage, ExtraBody: b.ExtraBody,
			RequestTimeout: b.RequestTimeout},
		Dataset: b.Dataset, NumPrompts: b.NumPrompts,
		Load: loadgen.Options{MaxConcurrency: b.MaxConcurrency, RequestRate: rate, Burstiness: burst, NumWarmups: b.NumWarmups,
			Seed: b.Seed, RequestIDPrefix: b.RequestIDPrefix},
		Percentiles: b.Percentiles, SLO: b.SLO, Label: b.Label, ServerTokenizer: b.ServerTokenizer,
	}, nil
}

// saveConfig writes cfg's plan into the run.
func saveConfig(cfg *Config, write func(name string, data []byte) error) error {
	t := cfg.Target
	s := saved{Target: TargetRef{Unit: t.Unit, BaseURL: t.BaseURL, Model: t.Model, CatalogModel: t.CatalogModel, Device: t.Device,
		Catalog: devOnly(t.Catalog)},
		Workflow: cfg.Workflow, Limit: cfg.Limit, Point: cfg.Point, TargetsOnly: cfg.TargetsOnly, Targets: cfg.Targets,
		TargetsSource: cfg.TargetsSource, NumPrompts: cfg.NumPrompts, MaxConcurrency: cfg.MaxConcurrency,
		NoTraceCapture: cfg.NoTraceCapture, Bench: saveBench(cfg.Bench), Evals: cfg.Evals, Tests: cfg.Tests}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ConfigFile, err)
	}
	return write(ConfigFile, append(b, '\n'))
}

// LoadConfig reads the plan of the run in dir: the Config to finish it
// with (without Target, Store and the display, which the caller sets) and
// the server it measured.
func LoadConfig(ctx context.Context, dir string) (Config, TargetRef, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := runs.ReadFile(ctx, path, MaxPlanBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, TargetRef{}, fmt.Errorf("run %s keeps no plan to resume from: %w", dir, err)
	}
	if err != nil {
		return Config{}, TargetRef{}, fmt.Errorf("the run's plan: %w", err)
	}
	var s saved
	if err := json.Unmarshal(b, &s); err != nil {
		return Config{}, TargetRef{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg := Config{Workflow: s.Workflow, Limit: s.Limit, Point: s.Point, TargetsOnly: s.TargetsOnly, Targets: s.Targets,
		TargetsSource: s.TargetsSource, NumPrompts: s.NumPrompts, MaxConcurrency: s.MaxConcurrency,
		NoTraceCapture: s.NoTraceCapture, Evals: s.Evals, Tests: s.Tests}
	if s.Bench != nil {
		if cfg.Bench, err = s.Bench.point(); err != nil {
			return Config{}, TargetRef{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return cfg, s.Target, nil
}

// devOnly keeps a catalog mode only when it is not the default, so that
// the plans of prod runs read as before.
func devOnly(mode string) string {
	if mode == catalog.ModeDev {
		return mode
	}
	return ""
}
