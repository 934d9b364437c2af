package catalog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units/limit"
)

// Every served spec of both catalogs has a suite (the dev catalog's
// TRAINING specs serve no inference API to test), every suite starts with
// liveness and ends with stability, and every test has a description.
func TestSpecTestSuiteForEverySpec(t *testing.T) {
	served := map[string]bool{}
	for _, types := range SpecTestClasses {
		for _, mt := range types {
			served[mt] = true
		}
	}
	for _, mode := range []string{ModeProd, ModeDev} {
		specs, err := SpecsIn(mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if !served[s.ModelType] {
				if s.ModelType != "TRAINING" {
					t.Errorf("%s on %s: model type %s is in no spec-test class", s.ModelName, s.Device, s.ModelType)
				}
				continue
			}
			suite, err := SpecTestSuiteFor(&s)
			if err != nil {
				t.Errorf("%s %s on %s: %v", mode, s.ModelName, s.Device, err)
				continue
			}
			if len(suite.Tests) < 2 || suite.Tests[0].Template != "liveness" || suite.Tests[len(suite.Tests)-1].Template != "stability" {
				t.Errorf("%s on %s: suite %s does not run liveness first and stability last", s.ModelName, s.Device, suite.Name)
			}
			for _, tc := range suite.Tests {
				if tc.Description == "" || tc.Name == "" {
					t.Errorf("suite %s: test %+v has no name or description", suite.Name, tc)
				}
			}
		}
	}
}

// A stability run lasts seconds in smoke and minutes in ci-nightly, as the
// run sizes promise; every size has a duration.
func TestStabilityDurations(t *testing.T) {
	suite, err := SpecTestSuiteNamed("text", "", "")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(suite.Tests, func(t SpecTest) bool { return t.Name == "stability" })
	if i < 0 {
		t.Fatal("no stability test in the text suite")
	}
	p := suite.Tests[i].Params
	for _, m := range limit.All() {
		if _, ok := p.Duration(m); !ok {
			t.Errorf("no stability duration for %s", m)
		}
	}
	smoke, _ := p.Duration(limit.Smoke)
	nightly, _ := p.Duration(limit.CINightly)
	if smoke > time.Minute || nightly < time.Minute {
		t.Errorf("stability lasts %s in smoke and %s in ci-nightly; want seconds and minutes", smoke, nightly)
	}
}

// Per-model overrides replace the template's parameters for those models
// alone.
func TestSpecTestOverrides(t *testing.T) {
	steps := func(model string) IntRange {
		t.Helper()
		s, err := SpecTestSuiteNamed("image", model, "t3k")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range s.Tests {
			if tc.Name == "image_steps" {
				return *tc.Params.Steps
			}
		}
		t.Fatalf("no image_steps in %+v", s)
		return IntRange{}
	}
	if got := steps("FLUX.1-dev"); got.Min != 4 {
		t.Errorf("FLUX.1-dev steps %+v, want a minimum of 4", got)
	}
	if got := steps("stable-diffusion-3.5-large"); got.Min != 12 || got.Max != 50 || got.Default != 20 {
		t.Errorf("SD3.5 steps %+v, want 12-50, default 20", got)
	}
	// Clones: changing one answer leaves the catalog alone.
	a, _ := SpecTestSuiteNamed("image", "FLUX.1-dev", "")
	a.Tests[1].Params.Steps.Min = 99
	if got := steps("FLUX.1-dev"); got.Min != 4 {
		t.Error("a returned suite shares its parameters with the catalog")
	}
	if _, err := SpecTestSuiteNamed("nope", "", ""); err == nil || !strings.Contains(err.Error(), "text") {
		t.Errorf("unknown suite: %v", err)
	}
}

// Tests that need a tool-call parser are required only where the spec
// names one.
func TestToolCallParser(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Fatal(err)
	}
	if s.ToolCallParser() != "llama3_json" {
		t.Errorf("Llama-3.1-8B-Instruct parser %q", s.ToolCallParser())
	}
	suite, _ := SpecTestSuiteFor(s)
	var req []string
	for _, tc := range suite.Tests {
		if tc.Requires == RequiresToolCallParser {
			req = append(req, tc.Name)
		}
	}
	if strings.Join(req, ",") != "structured_outputs,tool_calls" {
		t.Errorf("tests that need a parser: %v", req)
	}
}

func TestLivenessTimeout(t *testing.T) {
	if got := LivenessTimeout("galaxy"); got != 2200*time.Second {
		t.Errorf("galaxy %s, want upstream's 220 tries of 10 s", got)
	}
	if got := LivenessTimeout("n150x4"); got != DefaultLivenessTimeout {
		t.Errorf("unlisted device %s", got)
	}
}

// Broken data is refused with the entry and the field named.
func TestParseSpecTestsRefuses(t *testing.T) {
	const tmpl = `{"name":"liveness","classes":["any"],"description":"d"}`
	for _, tc := range []struct{ doc, want string }{
		{`{"templates":[],"suites":[],"overrides":[],"hardware_defaults":{"devices":{}},"extra":1}`, "unknown field"},
		{`{"templates":[{"name":"x","classes":["tv"],"description":"d"}]}`, `unknown class "tv"`},
		{`{"templates":[` + tmpl + `,` + tmpl + `]}`, "a second template"},
		{`{"templates":[` + tmpl + `],"suites":[{"name":"s","model_types":["LLM"],"tests":[{"template":"nope"}]}]}`, `unknown template "nope"`},
		{`{"templates":[{"name":"x","classes":["image"],"description":"d"}],"suites":[{"name":"s","model_types":["LLM"],"tests":[{"template":"x"}]}]}`, "checks image models"},
		{`{"templates":[` + tmpl + `],"suites":[{"name":"s","model_types":["LLM"],"tests":[{"template":"liveness"},{"template":"liveness"}]}]}`, "a second test"},
		{`{"templates":[` + tmpl + `],"suites":[{"name":"s","model_types":["LLM"],"tests":[{"template":"liveness","limits":["weekly"]}]}]}`, `limit "weekly"`},
		{`{"templates":[{"name":"x","classes":["any"],"description":"d","params":{"durations":{"smoke":"soon"}}}]}`, `durations.smoke "soon"`},
		{`{"templates":[{"name":"x","classes":["any"],"description":"d","params":{"steps":{"min":50,"max":12}}}]}`, "steps: min 50"},
		{`{"templates":[{"name":"x","classes":["any"],"description":"d","params":{"sizes":["big"]}}]}`, `size "big"`},
		{`{"templates":[` + tmpl + `],"overrides":[{"test":"nope","models":["m"]}]}`, "no test of that name"},
		{`{"templates":[` + tmpl + `],"hardware_defaults":{"devices":{"n151":{"liveness_timeout":"1m"}}}}`, "n151"},
		{`{"templates":[` + tmpl + `],"hardware_defaults":{"devices":{"n150":{"liveness_timeout":"-1m"}}}}`, "liveness_timeout"},
	} {
		_, err := parseSpecTests([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spectests.json") {
			t.Errorf("%s: error %v, want one naming spectests.json and %q", tc.doc, err, tc.want)
		}
	}
}

func FuzzParseSpecTests(f *testing.F) {
	f.Add(specTestsJSON)
	f.Add([]byte(`{"templates":[{"name":"x","classes":["any"],"description":"d","params":{"steps":{"min":1,"max":2}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseSpecTests(b)
		if err != nil {
			return
		}
		// Whatever parses names known templates in every suite.
		for _, s := range d.Suites {
			for _, tc := range s.Tests {
				if tc.Name == "" || tc.Template == "" {
					t.Fatalf("suite %s has a test without a name: %+v", s.Name, tc)
				}
			}
		}
	})
}
