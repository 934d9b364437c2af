package schedule

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/units"
)

func TestWorkflowRunnerRefusesInactiveUnit(t *testing.T) {
	store := &runs.Store{Root: t.TempDir()}
	run := WorkflowRunner(store, "test", func(string) error { return errors.New("unit a is failed, not active") }, nil, nil, nil)
	err := run(context.Background(), &units.Unit{Name: "a", Model: "M", Listen: "127.0.0.1:9"}, units.Schedule{Workflow: "release"})
	if err == nil || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("error %v", err)
	}
	if list, _ := store.List(context.Background(), ""); len(list) != 0 {
		t.Errorf("a run was recorded: %v", list)
	}
}

// A scheduled evals run gets the Hub client from the daemon: offline with
// an empty cache, the references whose data is missing are not measured,
// the run says which pull command fetches them, and the schedule reports
// the incomplete run as an error.
func TestWorkflowRunnerPullsEvalData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	srv := testbin.Serve(t, "model = \"Llama-3.2-3B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n")
	store := &runs.Store{Root: t.TempDir()}
	asked := 0
	data := func() (*hub.Client, error) {
		asked++
		return hub.New(hub.Config{CacheDir: t.TempDir(), Offline: true})
	}
	run := WorkflowRunner(store, "test", nil, nil, nil, data)
	u := &units.Unit{Name: "sim", Model: "Llama-3.2-3B-Instruct", Device: "n150", Runtime: "sim", Listen: strings.TrimPrefix(srv.URL, "http://")}
	err := run(context.Background(), u, units.Schedule{Workflow: "evals", Limit: "smoke"})
	if err == nil || asked != 1 {
		t.Fatalf("run error %v, Hub asked %d times", err, asked)
	}
	list, _ := store.List(context.Background(), "")
	if len(list) != 1 {
		t.Fatalf("runs %v", list)
	}
	report, rerr := os.ReadFile(filepath.Join(store.Dir(list[0]), "report.md"))
	if rerr != nil || !strings.Contains(string(report), "ttisctl dataset pull meta_gpqa meta_math livecodebench --catalog-model Llama-3.2-3B-Instruct") {
		t.Errorf("report lacks the pull command: %v\n%s", rerr, report)
	}
	// A benchmarks run needs no datasets.
	_ = run(context.Background(), u, units.Schedule{Workflow: "benchmarks", Limit: "smoke"})
	if asked != 1 {
		t.Error("a benchmarks run asked for the Hub")
	}
}
