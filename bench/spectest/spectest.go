// Package spectest plans the spec tests of a run, without I/O: which of
// the catalog's checks of the served API (units/catalog's spec-test
// suites) a server is held to, with what parameters, and which of them
// count in the verdict. The server's spec (model class, max_context,
// max_concurrency, tool-call parser, media layout), the run size and the
// unit's [tests] overrides decide; bench/spectest/check runs the plan
// against the server, and bench/release grades the results.
package spectest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// Verdict is a test's outcome; a test that did not run has none (its
// Result says why in NotRun). The values are bench/release's PASS and
// FAIL.
type Verdict string

// The verdicts.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
)

// Input is what planning needs to know of the server under test.
type Input struct {
	// Spec is the catalog entry of the served (model, device); nil for a
	// model the catalog does not know (a cpu unit's GGUF, a --url server).
	Spec *catalog.Spec
	// Limit is the run size (default smoke).
	Limit limit.Mode
	// Tests are the unit's [tests] overrides (none for a --url server).
	Tests units.Tests
	// Runtime is the server's runtime ("cpu", "sim", "vllm"; "" when
	// unknown): ttis's own runtimes serve structured outputs and tool
	// calls for any model.
	Runtime string
	// Device picks the readiness timeout.
	Device string
	// MaxContext and MaxConcurrency stand in for the spec's when there
	// is none: the context length the server reports, and the
	// concurrency the run was given.
	MaxContext, MaxConcurrency int
	// MaxAudioSeconds is the unit's limit on a transcription clip
	// ([media] max_audio_duration_seconds; 0: the suite's default, which
	// is tt-media-server's).
	MaxAudioSeconds float64
}

// Test is one planned test.
type Test struct {
	Name        string `json:"name"`
	Template    string `json:"template"`
	Description string `json:"description"`
	Upstream    string `json:"upstream,omitempty"`
	// Required tests count in the verdict: one that does not run makes a
	// run INCOMPLETE. A test the spec does not promise, or that belongs
	// to a larger run size, is listed but not required (and runs for
	// information only when it has no Skip).
	Required bool `json:"required"`
	// Skip says why the test will not run ("" when it runs).
	Skip   string `json:"skip,omitempty"`
	Params Params `json:"params"`
}

// Params are a test's resolved parameters: the catalog's for its suite
// and model, and what the spec, the run size and the unit set.
type Params struct {
	catalog.SpecTestParams
	// Class is the suite's model class (text, image, audio, speech, cnn,
	// embedding, video).
	Class string `json:"class"`
	// MaxContext and MaxConcurrency are the limits the server promises.
	MaxContext     int `json:"max_context,omitempty"`
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Duration is how long the stability load lasts and Load how many
	// requests it keeps in flight.
	Duration time.Duration `json:"duration,omitempty"`
	Load     int           `json:"load,omitempty"`
	// LivenessTimeout is how long the server may take to become ready.
	LivenessTimeout time.Duration `json:"liveness_timeout,omitempty"`
	// Runner is a media spec's tt-media-server runner; Workers the worker
	// count of its catalog layout (0: unknown).
	Runner  string `json:"runner,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Dimensions is an embedding model's vector length and Matryoshka
	// whether it may be shortened (0: unknown).
	Dimensions int  `json:"dimensions,omitempty"`
	Matryoshka bool `json:"matryoshka,omitempty"`
}

// Plan lists the tests of a run, in the suite's order (liveness first,
// stability last). Every test of the suite is listed: those that will not
// run say why.
func Plan(in Input) ([]Test, error) {
	if in.Limit == "" {
		in.Limit = limit.Smoke
	}
	suite, class, err := suiteOf(in)
	if err != nil {
		return nil, err
	}
	for _, s := range in.Tests.Skip {
		if !slices.ContainsFunc(suite.Tests, func(t catalog.SpecTest) bool { return t.Name == s }) {
			return nil, fmt.Errorf("tests.skip: suite %s has no test %q (it has %s)", suite.Name, s, strings.Join(testNames(suite), ", "))
		}
	}
	base := Params{Class: class, MaxContext: in.MaxContext, MaxConcurrency: max(in.MaxConcurrency, 1),
		LivenessTimeout: catalog.LivenessTimeout(in.Device)}
	if s := in.Spec; s != nil {
		base.LivenessTimeout = catalog.LivenessTimeout(s.Device)
		if s.MaxContext > 0 {
			base.MaxContext = s.MaxContext
		}
		if s.MaxConcurrency > 0 {
			base.MaxConcurrency = s.MaxConcurrency
		}
		if s.IsMedia() {
			if layout, err := catalog.MediaLayout(s); err == nil {
				base.Runner, base.Workers = layout.Runner, layout.Workers
			}
			base.Dimensions, base.Matryoshka, _ = catalog.EmbeddingDimensions(s.ModelName)
		}
	}
	var out []Test
	for _, c := range suite.Tests {
		t := Test{Name: c.Name, Template: c.Template, Description: c.Description, Upstream: c.Upstream, Required: true, Params: base}
		t.Params.SpecTestParams = c.Params
		if c.Template == "transcribe_lengths" && in.MaxAudioSeconds > 0 {
			t.Params.MaxAudioSeconds = in.MaxAudioSeconds
		}
		if c.Template == "stability" {
			d, ok := c.Params.Duration(in.Limit)
			if in.Tests.StabilityDuration.Duration > 0 {
				d, ok = in.Tests.StabilityDuration.Duration, true
			}
			if !ok {
				return nil, fmt.Errorf("suite %s: test %s has no duration for a %s run", suite.Name, c.Name, in.Limit)
			}
			t.Params.Duration = d
			t.Params.Load = base.MaxConcurrency
			if c.Params.Concurrency > 0 {
				t.Params.Load = c.Params.Concurrency
			}
			if in.Tests.StabilityConcurrency > 0 {
				t.Params.Load = in.Tests.StabilityConcurrency
			}
		}
		switch {
		case slices.Contains(in.Tests.Skip, c.Name):
			t.Skip = "skipped by the unit's [tests] skip"
		case !c.RunsIn(in.Limit):
			t.Required, t.Skip = false, "runs in "+strings.Join(c.Limits, ", ")+" runs, not "+string(in.Limit)
		case c.Requires == catalog.RequiresToolCallParser:
			t.Required, t.Skip = toolCallsPromised(in)
		}
		if t.Skip == "" && needsContext(c.Template) && t.Params.MaxContext < 1 {
			// Without a known context length there is nothing to hold
			// the server to.
			t.Required, t.Skip = false, "not promised: the catalog has no spec for the model and the server reports no context length"
		}
		out = append(out, t)
	}
	return out, nil
}

// suiteOf picks the suite: the unit's, else the spec's, else (a model the
// catalog does not know) text, which every runtime without a spec serves.
func suiteOf(in Input) (catalog.SpecTestSuite, string, error) {
	model, device := "", in.Device
	if in.Spec != nil {
		model, device = in.Spec.ModelName, in.Spec.Device
	}
	var suite catalog.SpecTestSuite
	var err error
	switch {
	case in.Tests.Suite != "":
		suite, err = catalog.SpecTestSuiteNamed(in.Tests.Suite, model, device)
	case in.Spec != nil:
		suite, err = catalog.SpecTestSuiteFor(in.Spec)
	default:
		suite, err = catalog.SpecTestSuiteNamed("text", "", device)
	}
	if err != nil {
		return catalog.SpecTestSuite{}, "", err
	}
	for class, types := range catalog.SpecTestClasses {
		if len(suite.ModelTypes) > 0 && slices.Contains(types, suite.ModelTypes[0]) {
			return suite, class, nil
		}
	}
	return catalog.SpecTestSuite{}, "", fmt.Errorf("suite %s: model types %s are in no spec-test class", suite.Name, strings.Join(suite.ModelTypes, ", "))
}

// toolCallsPromised says whether a server is held to tool calls and
// structured outputs: where the spec names a tool-call parser. Without a
// spec nothing promises them; ttis's own runtimes serve them for every
// model, so they are run there for information (not required), and
// skipped elsewhere.
func toolCallsPromised(in Input) (required bool, skip string) {
	switch {
	case in.Spec != nil && in.Spec.ToolCallParser() != "":
		return true, ""
	case in.Spec != nil:
		return false, "not promised: the spec names no tool-call parser for " + in.Spec.ModelName
	case in.Runtime == "cpu" || in.Runtime == "sim":
		return false, ""
	}
	return false, "not promised: the catalog has no spec for the model, and the server is not a ttis runtime"
}

func needsContext(template string) bool {
	return template == "context_length" || template == "context_full"
}

func testNames(s catalog.SpecTestSuite) []string {
	out := make([]string, len(s.Tests))
	for i, t := range s.Tests {
		out[i] = t.Name
	}
	return out
}
