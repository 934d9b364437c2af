package release

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units/limit"
)

// TestConfigKeepsNoTraceCapture: a run started with --no-trace-capture
// resumes without the warm-up, and one started with it resumes with it;
// the points measured after a resume must share the conditions of those
// measured before.
func TestConfigKeepsNoTraceCapture(t *testing.T) {
	for _, off := range []bool{true, false} {
		dir := t.TempDir()
		cfg := Config{Target: &target.Target{Unit: "u", BaseURL: "http://127.0.0.1:1", Model: "m", CatalogModel: "M", Device: "n150"},
			Workflow: WorkflowBenchmarks, Limit: limit.Smoke, NoTraceCapture: off}
		write := func(name string, data []byte) error { return os.WriteFile(filepath.Join(dir, name), data, 0o600) }
		if err := saveConfig(&cfg, write); err != nil {
			t.Fatal(err)
		}
		got, _, err := LoadConfig(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.NoTraceCapture != off {
			t.Errorf("saved NoTraceCapture=%v, resumed with %v", off, got.NoTraceCapture)
		}
	}
}
