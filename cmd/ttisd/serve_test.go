package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/units"
)

func TestRunUnitRuntimeNotAvailable(t *testing.T) {
	u := &units.Unit{Name: "big", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "vllm", Listen: "127.0.0.1:0"}
	registry := map[string]serve.OpenFunc{"sim": runtimes["sim"]}
	err := runUnit(context.Background(), u, registry, serve.Options{})
	if err == nil || !strings.Contains(err.Error(), `runtime "vllm" is not available`) || !strings.Contains(err.Error(), "sim") {
		t.Fatalf("runUnit = %v, want a clear runtime-not-available error listing the available ones", err)
	}
}
