package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/runtime/sim"
	"github.com/ttis-dev/ttis/units"
)

func TestRunUnitRuntimeNotAvailable(t *testing.T) {
	u := &units.Unit{Name: "big", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "vllm", Listen: "127.0.0.1:0"}
	opens := map[string]serve.OpenFunc{"sim": sim.Open}
	err := runUnit(context.Background(), u, opens, nil, serve.Options{})
	if err == nil || !strings.Contains(err.Error(), `runtime "vllm" is not available`) || !strings.Contains(err.Error(), "sim") {
		t.Fatalf("runUnit = %v, want a clear runtime-not-available error listing the available ones", err)
	}
}
