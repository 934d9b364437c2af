package release

import (
	"context"
	"errors"
	"net/url"

	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/units/catalog"
)

// hubModel is the Hub repository of a catalog model ("{model}" of Meta's
// per-model evaluation sets), or "" when the catalog does not know it.
func hubModel(catalogModel string) string {
	specs, err := catalog.ModelSpecs(catalogModel)
	if err != nil || len(specs) == 0 {
		return ""
	}
	return specs[0].HFRepo
}

// pullEvalData pulls, before the plan, the Hub data of every task the run
// may evaluate (the catalog's references and the explicit tasks) that has
// no local file, so that a task whose data is at hand counts as runnable.
// It returns each tried task's outcome (nil: pulled) and hands the data to
// the eval step. Without a Hub client nothing is tried. When the endpoint
// cannot be reached, the remaining tasks reuse that error instead of each
// waiting through its own retries.
func pullEvalData(ctx context.Context, cfg *Config, ec *workflow.Config) map[string]error {
	if ec.Hub == nil {
		return nil
	}
	// Explicit tasks replace the references (those are not selected).
	names := append([]string(nil), ec.Tasks...)
	if len(names) == 0 {
		for _, ref := range catalog.ModelEvalRefs(cfg.Target.CatalogModel) {
			names = append(names, ref.Task)
		}
	}
	// A resumed run reads the commits it read before.
	earlier, err := workflow.ReadDataFile(ec.OutputDir)
	if err != nil {
		cfg.logf("evals: %v (the data is resolved again)", err)
	}
	pins := taskdata.PinsOf(earlier)
	out := map[string]error{}
	var unreachable *url.Error
	var problems []Blocker
	defer func() { logProblems(cfg, problems) }()
	for _, name := range names {
		if _, done := out[name]; done || !taskdata.PullableFor(name, ec.HubModel) || needsASR(name, ec) {
			continue
		}
		_, local := ec.Datasets[name]
		if _, only := ec.Datasets[""]; local || (only && len(ec.Tasks) == 1) {
			continue // a local file (TASK=PATH, or PATH for the only task)
		}
		var err error
		var data *taskdata.Data
		if unreachable != nil {
			// The endpoint is down: each task is told so, with its own
			// data and fix, without waiting through its own retries.
			err = unreachable
		} else if data, err = taskdata.PullPinned(ctx, ec.Hub, name, ec.HubModel, pins); err != nil && ctx.Err() != nil {
			return out
		}
		if err != nil {
			var ue *url.Error
			if unreachable == nil && errors.As(err, &ue) {
				unreachable = ue
			}
			p := taskdata.Explain(name, ec.HubModel, err)
			out[name] = p
			problems = append(problems, Blocker{Key: name, Message: p.Data, Cause: p.Cause, Fix: p.Fix})
			continue
		}
		if ec.Pulled == nil {
			ec.Pulled = map[string]*taskdata.Data{}
		}
		ec.Pulled[name] = data
		out[name] = nil
		for _, s := range data.Splits {
			cfg.logf("evals: %s: %s %s split %s at %s (%d file(s))", name, s.Repo, s.Config, s.HubData.Split, s.Commit[:min(12, len(s.Commit))], len(s.Files))
		}
	}
	if len(ec.Pulled) > 0 {
		// Recorded before the tasks run, so that an interrupted run
		// resumes on the same commits.
		if _, err := workflow.WriteDataFile(ec.OutputDir, ec.Pulled); err != nil {
			cfg.logf("evals: %v", err)
		}
	}
	return out
}

// logProblems says, once per cause, which tasks have no data, each with
// what it reads, and the one command that fetches all of them.
func logProblems(cfg *Config, problems []Blocker) {
	for _, g := range GroupBlockers(problems) {
		cfg.logf("evals: no data for %d task(s): %s", len(g.Items), g.Cause)
		for _, b := range g.Items {
			cfg.logf("evals:   %s: %s", b.Key, b.Message)
		}
		if g.Fix != "" {
			cfg.logf("evals:   fix: %s (or pass --dataset TASK=PATH)", g.Fix)
		}
	}
}

// needsASR reports whether task needs a speech-recognition server that ec
// does not configure (its data is then not pulled: it cannot run).
func needsASR(task string, ec *workflow.Config) bool {
	info, ok := tasks.InfoOf(task)
	return ok && info.NeedsASR && ec.ASRURL == ""
}
