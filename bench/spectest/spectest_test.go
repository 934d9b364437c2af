package spectest

import (
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

func lookup(t *testing.T, model, device string) *catalog.Spec {
	t.Helper()
	s, err := catalog.Lookup(model, device)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func byName(t *testing.T, tests []Test, name string) Test {
	t.Helper()
	for _, tc := range tests {
		if tc.Name == name {
			return tc
		}
	}
	t.Fatalf("no test %s in %+v", name, tests)
	return Test{}
}

func names(tests []Test) string {
	var n []string
	for _, t := range tests {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

// A catalog LLM is held to the spec's limits; the tests its run size
// does not hold are listed, not required.
func TestPlanCatalogLLM(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n150")
	plan, err := Plan(Input{Spec: spec, Limit: limit.Smoke, Runtime: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	want := "liveness,stream_agrees,max_tokens,stop,n,seed,logprobs,temperature_0,context_length,context_full,concurrency,structured_outputs,tool_calls,stability"
	if got := names(plan); got != want {
		t.Errorf("tests %s\nwant %s", got, want)
	}
	for _, tc := range plan {
		if tc.Params.Class != "text" || tc.Params.MaxContext != spec.MaxContext || tc.Params.MaxConcurrency != spec.MaxConcurrency {
			t.Errorf("%s: params %+v", tc.Name, tc.Params)
		}
		full := tc.Name == "context_full"
		if tc.Required == full || (tc.Skip != "") != full {
			t.Errorf("%s: required %v, skip %q", tc.Name, tc.Required, tc.Skip)
		}
	}
	if s := byName(t, plan, "context_full").Skip; !strings.Contains(s, "ci-nightly") {
		t.Errorf("context_full skip %q", s)
	}
	st := byName(t, plan, "stability")
	if st.Params.Duration != 10*time.Second || st.Params.Load != spec.MaxConcurrency {
		t.Errorf("smoke stability %s at %d", st.Params.Duration, st.Params.Load)
	}
	if lt := byName(t, plan, "liveness").Params.LivenessTimeout; lt != catalog.LivenessTimeout("n150") {
		t.Errorf("liveness timeout %s", lt)
	}

	nightly, err := Plan(Input{Spec: spec, Limit: limit.CINightly})
	if err != nil {
		t.Fatal(err)
	}
	if tc := byName(t, nightly, "context_full"); !tc.Required || tc.Skip != "" {
		t.Errorf("ci-nightly context_full: %+v", tc)
	}
	if d := byName(t, nightly, "stability").Params.Duration; d < time.Minute {
		t.Errorf("ci-nightly stability %s", d)
	}
}

// Tool calls and structured outputs are required where the spec names a
// tool-call parser; without a spec they run on ttis's own runtimes for
// information.
func TestPlanToolCallPromise(t *testing.T) {
	var noParser *catalog.Spec
	for _, s := range catalog.Specs() {
		if (s.ModelType == "LLM" || s.ModelType == "VLM") && s.ToolCallParser() == "" {
			noParser = &s
			break
		}
	}
	if noParser == nil {
		t.Fatal("every catalog LLM names a tool-call parser")
	}
	for _, tc := range []struct {
		name     string
		in       Input
		required bool
		why      string
	}{
		{"spec with a parser", Input{Spec: lookup(t, "Llama-3.1-8B-Instruct", "n150"), Runtime: "vllm"}, true, ""},
		{"spec without one", Input{Spec: noParser, Runtime: "sim"}, false, "names no tool-call parser"},
		{"cpu GGUF: run for information", Input{Runtime: "cpu", MaxContext: 2048}, false, ""},
		{"unknown server", Input{MaxContext: 4096}, false, "not a ttis runtime"},
	} {
		plan, err := Plan(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"tool_calls", "structured_outputs"} {
			got := byName(t, plan, n)
			if got.Required != tc.required || !strings.Contains(got.Skip, tc.why) || (tc.why == "") != (got.Skip == "") {
				t.Errorf("%s: %s required %v skip %q, want %v %q", tc.name, n, got.Required, got.Skip, tc.required, tc.why)
			}
		}
	}
}

// A model the catalog does not know is tested as text against the limits
// the server reports; without a context length the context tests are not
// promised.
func TestPlanWithoutSpec(t *testing.T) {
	plan, err := Plan(Input{Runtime: "cpu", MaxContext: 2048, MaxConcurrency: 8, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if cl := byName(t, plan, "context_length"); !cl.Required || cl.Params.MaxContext != 2048 || cl.Params.MaxConcurrency != 8 {
		t.Errorf("context_length %+v", cl)
	}
	plan, err = Plan(Input{Runtime: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	if cl := byName(t, plan, "context_length"); cl.Required || !strings.Contains(cl.Skip, "no context length") {
		t.Errorf("context_length without a length: %+v", cl)
	}
	if c := byName(t, plan, "concurrency"); c.Params.MaxConcurrency != 1 {
		t.Errorf("concurrency without a spec or a given one: %d", c.Params.MaxConcurrency)
	}
}

// A unit's skips stay required (not run means INCOMPLETE); its stability
// settings win over the run size's.
func TestPlanUnitOverrides(t *testing.T) {
	spec := lookup(t, "Llama-3.1-8B-Instruct", "n150")
	plan, err := Plan(Input{Spec: spec, Tests: units.Tests{Skip: []string{"stop"}, StabilityDuration: units.Duration{Duration: 3 * time.Second}, StabilityConcurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if s := byName(t, plan, "stop"); !s.Required || !strings.Contains(s.Skip, "[tests] skip") {
		t.Errorf("skipped stop %+v", s)
	}
	if st := byName(t, plan, "stability"); st.Params.Duration != 3*time.Second || st.Params.Load != 2 {
		t.Errorf("stability %s at %d", st.Params.Duration, st.Params.Load)
	}
	if _, err := Plan(Input{Spec: spec, Tests: units.Tests{Skip: []string{"image_seed"}}}); err == nil || !strings.Contains(err.Error(), "suite text has no test \"image_seed\"") {
		t.Errorf("skip of another suite's test: %v", err)
	}
	if _, err := Plan(Input{Spec: spec, Tests: units.Tests{Suite: "nope"}}); err == nil {
		t.Error("unknown suite planned")
	}
}

// Media specs get their class's suite with the catalog's layout and the
// per-model ranges.
func TestPlanMedia(t *testing.T) {
	sdxl := lookup(t, "stable-diffusion-xl-base-1.0", "n150")
	plan, err := Plan(Input{Spec: sdxl})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(plan); got != "liveness,image_steps,image_guidance,image_sizes,image_count,image_seed,stability" {
		t.Errorf("SDXL tests %s", got)
	}
	sizes := byName(t, plan, "image_sizes").Params
	if sizes.Class != "image" || sizes.Runner != "tt-sdxl-trace" || sizes.Workers < 1 || len(sizes.Sizes) != 2 {
		t.Errorf("SDXL image_sizes params %+v", sizes)
	}
	whisper := lookup(t, "whisper-large-v3", "n150")
	plan, err = Plan(Input{Spec: whisper, MaxAudioSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	if p := byName(t, plan, "transcribe_lengths").Params; p.Class != "audio" || p.MaxAudioSeconds != 30 {
		t.Errorf("whisper lengths %+v", p)
	}
	emb := lookup(t, "Qwen3-Embedding-8B", "n150")
	plan, err = Plan(Input{Spec: emb})
	if err != nil {
		t.Fatal(err)
	}
	if p := byName(t, plan, "embedding_params").Params; p.Dimensions != 4096 || !p.Matryoshka {
		t.Errorf("embedding params %+v", p)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("héllo wörld", 2); got != "h… (12 more bytes)" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("short", 10); got != "short" {
		t.Errorf("Truncate = %q", got)
	}
}
