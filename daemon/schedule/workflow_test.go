package schedule

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/units"
)

func TestWorkflowRunnerRefusesInactiveUnit(t *testing.T) {
	store := &runs.Store{Root: t.TempDir()}
	run := WorkflowRunner(store, "test", func(string) error { return errors.New("unit a is failed, not active") }, nil, nil)
	err := run(context.Background(), &units.Unit{Name: "a", Model: "M", Listen: "127.0.0.1:9"}, units.Schedule{Workflow: "release"})
	if err == nil || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("error %v", err)
	}
	if list, _ := store.List(""); len(list) != 0 {
		t.Errorf("a run was recorded: %v", list)
	}
}
