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
	var unreachable error
	for _, name := range names {
		if _, done := out[name]; done || !taskdata.PullableFor(name, ec.HubModel) || needsASR(name, ec) {
			continue
		}
		_, local := ec.Datasets[name]
		if _, only := ec.Datasets[""]; local || (only && len(ec.Tasks) == 1) {
			continue // a local file (TASK=PATH, or PATH for the only task)
		}
		if unreachable != nil {
			out[name] = unreachable
			continue
		}
		data, err := taskdata.PullPinned(ctx, ec.Hub, name, ec.HubModel, pins)
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			err = workflow.PullError(name, ec.HubModel, err)
			var ue *url.Error
			if errors.As(err, &ue) {
				unreachable = err
			}
			out[name] = err
			cfg.logf("evals: %s: no data: %v", name, err)
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

// needsASR reports whether task needs a speech-recognition server that ec
// does not configure (its data is then not pulled: it cannot run).
func needsASR(task string, ec *workflow.Config) bool {
	info, ok := tasks.InfoOf(task)
	return ok && info.NeedsASR && ec.ASRURL == ""
}
