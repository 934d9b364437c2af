package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// A failed engine open ends Run at once with the error: it used to wait
// the whole shutdown grace (25 s under the daemon) for a second result of
// the open, showing "activating" without an error meanwhile.
func TestRunFailedOpenReturnsPromptly(t *testing.T) {
	cfg := Config{Listen: "127.0.0.1:0", Model: "m", MaxConcurrency: 1, ShutdownGrace: 30 * time.Second}
	errs := make(chan error, 1)
	start := time.Now()
	go func() {
		errs <- Run(context.Background(), cfg, func(context.Context) (runtime.Backend, error) {
			return nil, errors.New("model file /m.gguf is not a GGUF file")
		})
	}()
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "open runtime: model file /m.gguf is not a GGUF file") {
			t.Fatalf("Run = %v, want the open error", err)
		}
		// Far below the 30 s grace; the bound only guards a slow machine.
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Run took %s after a failed open", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of a failed open")
	}
}
