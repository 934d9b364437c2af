package catalog

import (
	"bytes"
	_ "embed" // spectests.json is embedded below
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/units/limit"
)

// specTestsJSON is the spec-test configuration, after tt-inference-server's
// test_module: test templates (the checks ttis implements, with their
// default parameters), suites per model class (and device), per-model
// overrides of a test's parameters, and hardware defaults. What a test
// does lives in bench/spectest; which tests a run holds is this data.
//
//go:embed data/spectests.json
var specTestsJSON []byte

// SpecTestClasses are the model classes a template can check, by the
// spec's ModelType; ClassAny is every class.
var SpecTestClasses = map[string][]string{
	"text":      {"LLM", "VLM"},
	"image":     {"IMAGE"},
	"audio":     {"AUDIO"},
	"speech":    {"TEXT_TO_SPEECH"},
	"cnn":       {"CNN"},
	"embedding": {"EMBEDDING"},
	"video":     {"VIDEO"},
}

// ClassAny marks a template every model class runs (liveness, stability).
const ClassAny = "any"

// RequiresToolCallParser marks a test required only where the spec names a
// tool-call parser (its metadata's tool_call_parser_name): vLLM serves tool
// calls, and the structured outputs they are decoded with, for such models.
const RequiresToolCallParser = "tool_call_parser"

// IntRange is a documented range of an integer parameter, with the value a
// request gets when it gives none.
type IntRange struct {
	Min     int `json:"min"`
	Max     int `json:"max"`
	Default int `json:"default,omitempty"`
}

// FloatRange is a documented range of a number parameter.
type FloatRange struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// SpecTestParams are a test's parameters. A field set in a suite's test
// case or an override replaces the template's; each test reads the fields
// it documents (bench/spectest).
type SpecTestParams struct {
	MaxTokens   []int    `json:"max_tokens,omitempty"`
	N           []int    `json:"n,omitempty"`
	Seeds       []int64  `json:"seeds,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopLogprobs int      `json:"top_logprobs,omitempty"`
	Repeats     int      `json:"repeats,omitempty"`
	// Concurrency is how many requests run at once (0: the spec's
	// max_concurrency).
	Concurrency int `json:"concurrency,omitempty"`
	// Durations is how long a steady load lasts, per run size
	// (limit.Mode → Go duration).
	Durations map[string]string `json:"durations,omitempty"`

	Steps           *IntRange   `json:"steps,omitempty"`
	Guidance        *FloatRange `json:"guidance,omitempty"`
	Images          *IntRange   `json:"images,omitempty"`
	Sizes           []string    `json:"sizes,omitempty"`
	Formats         []string    `json:"formats,omitempty"`
	ResponseFormats []string    `json:"response_formats,omitempty"`
	AudioSeconds    []float64   `json:"audio_seconds,omitempty"`
	MaxAudioSeconds float64     `json:"max_audio_seconds,omitempty"`
	Voices          []string    `json:"voices,omitempty"`
	MaxChars        int         `json:"max_chars,omitempty"`
	TopK            *IntRange   `json:"top_k,omitempty"`
	Confidence      *FloatRange `json:"confidence,omitempty"`
	Inputs          *IntRange   `json:"inputs,omitempty"`
}

// over returns p with every field o sets replacing p's.
func (p SpecTestParams) over(o SpecTestParams) SpecTestParams {
	if o.MaxTokens != nil {
		p.MaxTokens = slices.Clone(o.MaxTokens)
	}
	if o.N != nil {
		p.N = slices.Clone(o.N)
	}
	if o.Seeds != nil {
		p.Seeds = slices.Clone(o.Seeds)
	}
	if o.Temperature != nil {
		v := *o.Temperature
		p.Temperature = &v
	}
	if o.TopLogprobs != 0 {
		p.TopLogprobs = o.TopLogprobs
	}
	if o.Repeats != 0 {
		p.Repeats = o.Repeats
	}
	if o.Concurrency != 0 {
		p.Concurrency = o.Concurrency
	}
	if o.Durations != nil {
		p.Durations = map[string]string{}
		for k, v := range o.Durations {
			p.Durations[k] = v
		}
	}
	if o.Steps != nil {
		v := *o.Steps
		p.Steps = &v
	}
	if o.Guidance != nil {
		v := *o.Guidance
		p.Guidance = &v
	}
	if o.Images != nil {
		v := *o.Images
		p.Images = &v
	}
	if o.Sizes != nil {
		p.Sizes = slices.Clone(o.Sizes)
	}
	if o.Formats != nil {
		p.Formats = slices.Clone(o.Formats)
	}
	if o.ResponseFormats != nil {
		p.ResponseFormats = slices.Clone(o.ResponseFormats)
	}
	if o.AudioSeconds != nil {
		p.AudioSeconds = slices.Clone(o.AudioSeconds)
	}
	if o.MaxAudioSeconds != 0 {
		p.MaxAudioSeconds = o.MaxAudioSeconds
	}
	if o.Voices != nil {
		p.Voices = slices.Clone(o.Voices)
	}
	if o.MaxChars != 0 {
		p.MaxChars = o.MaxChars
	}
	if o.TopK != nil {
		v := *o.TopK
		p.TopK = &v
	}
	if o.Confidence != nil {
		v := *o.Confidence
		p.Confidence = &v
	}
	if o.Inputs != nil {
		v := *o.Inputs
		p.Inputs = &v
	}
	return p
}

// Duration is how long a steady load lasts in a run of size m (false
// when the parameters give none for it).
func (p SpecTestParams) Duration(m limit.Mode) (time.Duration, bool) {
	s, ok := p.Durations[string(m)]
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// SpecTestTemplate is one check of the served API that ttis implements
// (bench/spectest), with its default parameters.
type SpecTestTemplate struct {
	Name string `json:"name"`
	// Classes are the model classes it can check (SpecTestClasses keys, or
	// ClassAny).
	Classes     []string       `json:"classes"`
	Description string         `json:"description"`
	Params      SpecTestParams `json:"params"`
}

// SpecTest is one test of a suite: a template with its parameters.
type SpecTest struct {
	// Name is the test's name in reports and in a unit's [tests] skip
	// (the template's name unless the case gives another).
	Name     string `json:"name,omitempty"`
	Template string `json:"template"`
	// Description is the template's unless the case gives one.
	Description string `json:"description,omitempty"`
	// Requires names what a spec must promise for the test to be
	// required ("" always; RequiresToolCallParser).
	Requires string `json:"requires,omitempty"`
	// Limits are the run sizes it runs in (empty: every size).
	Limits []string `json:"limits,omitempty"`
	// Upstream is tt-inference-server's name of the check, which the
	// catalog's SPEC_TESTS known issues may use.
	Upstream string         `json:"upstream,omitempty"`
	Params   SpecTestParams `json:"params"`
}

// RunsIn reports whether the test runs in a run of size m.
func (t *SpecTest) RunsIn(m limit.Mode) bool {
	return len(t.Limits) == 0 || slices.Contains(t.Limits, string(m))
}

// SpecTestSuite is the tests of a model class (on some devices).
type SpecTestSuite struct {
	Name       string   `json:"name"`
	ModelTypes []string `json:"model_types"`
	// Devices are the devices it is for (empty: every device).
	Devices []string   `json:"devices,omitempty"`
	Tests   []SpecTest `json:"tests"`
}

// specTestOverride replaces a test's parameters for some models and
// devices (upstream's model_targets).
type specTestOverride struct {
	Comment string         `json:"_comment,omitempty"`
	Models  []string       `json:"models,omitempty"`
	Devices []string       `json:"devices,omitempty"`
	Test    string         `json:"test"`
	Params  SpecTestParams `json:"params"`
}

// HardwareDefaults are per-device settings of the tests.
type HardwareDefaults struct {
	// LivenessTimeout is how long a server may take to become ready
	// (a Go duration).
	LivenessTimeout string `json:"liveness_timeout"`
}

// DefaultLivenessTimeout is the readiness wait of a device the table does
// not list.
const DefaultLivenessTimeout = 10 * time.Minute

type specTestData struct {
	Source           string             `json:"_source"`
	Templates        []SpecTestTemplate `json:"templates"`
	Suites           []SpecTestSuite    `json:"suites"`
	Overrides        []specTestOverride `json:"overrides"`
	HardwareDefaults struct {
		Comment string                      `json:"_comment,omitempty"`
		Devices map[string]HardwareDefaults `json:"devices"`
	} `json:"hardware_defaults"`
}

var loadSpecTests = sync.OnceValues(func() (*specTestData, error) {
	return parseSpecTests(specTestsJSON)
})

// parseSpecTests decodes spectests.json strictly and checks it: every test
// names a known template of its suite's class, names are unique in a
// suite, parameters are in range, durations parse, run sizes and devices
// are known.
func parseSpecTests(b []byte) (*specTestData, error) {
	const file = "spectests.json"
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d specTestData
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("decode embedded catalog file %s: %w", file, err)
	}
	templates := map[string]*SpecTestTemplate{}
	for i := range d.Templates {
		t := &d.Templates[i]
		where := fmt.Sprintf("%s: templates[%d] (%s)", file, i, t.Name)
		if t.Name == "" || t.Description == "" || len(t.Classes) == 0 {
			return nil, fmt.Errorf("%s: name, classes and description are required", where)
		}
		if templates[t.Name] != nil {
			return nil, fmt.Errorf("%s: a second template of that name", where)
		}
		for _, c := range t.Classes {
			if _, ok := SpecTestClasses[c]; !ok && c != ClassAny {
				return nil, fmt.Errorf("%s: unknown class %q (want %s or %s)", where, c, strings.Join(classNames(), ", "), ClassAny)
			}
		}
		if err := checkParams(t.Params); err != nil {
			return nil, fmt.Errorf("%s: params: %w", where, err)
		}
		templates[t.Name] = t
	}
	suites := map[string]bool{}
	for i := range d.Suites {
		s := &d.Suites[i]
		where := fmt.Sprintf("%s: suites[%d] (%s)", file, i, s.Name)
		if s.Name == "" || len(s.ModelTypes) == 0 {
			return nil, fmt.Errorf("%s: name and model_types are required", where)
		}
		if suites[s.Name] {
			return nil, fmt.Errorf("%s: a second suite of that name", where)
		}
		suites[s.Name] = true
		for _, dev := range s.Devices {
			if _, err := Device(dev); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		names := map[string]bool{}
		for j := range s.Tests {
			c := &s.Tests[j]
			tw := fmt.Sprintf("%s: tests[%d]", where, j)
			t := templates[c.Template]
			if t == nil {
				return nil, fmt.Errorf("%s: unknown template %q", tw, c.Template)
			}
			if !classesCover(t.Classes, s.ModelTypes) {
				return nil, fmt.Errorf("%s: template %s checks %s models, not every one of %s", tw, t.Name, strings.Join(t.Classes, ", "), strings.Join(s.ModelTypes, ", "))
			}
			if c.Name == "" {
				c.Name = c.Template
			}
			if names[c.Name] {
				return nil, fmt.Errorf("%s: a second test named %q", tw, c.Name)
			}
			names[c.Name] = true
			if c.Description == "" {
				c.Description = t.Description
			}
			switch c.Requires {
			case "", RequiresToolCallParser:
			default:
				return nil, fmt.Errorf("%s: requires %q (want %q or nothing)", tw, c.Requires, RequiresToolCallParser)
			}
			for _, m := range c.Limits {
				if _, err := limit.Parse(m); err != nil {
					return nil, fmt.Errorf("%s: limits: %w", tw, err)
				}
			}
			if err := checkParams(c.Params); err != nil {
				return nil, fmt.Errorf("%s: params: %w", tw, err)
			}
			c.Params = t.Params.over(c.Params)
		}
	}
	for i, o := range d.Overrides {
		where := fmt.Sprintf("%s: overrides[%d] (%s)", file, i, o.Test)
		if templates[o.Test] == nil && !testNamed(d.Suites, o.Test) {
			return nil, fmt.Errorf("%s: no test of that name", where)
		}
		if len(o.Models) == 0 && len(o.Devices) == 0 {
			return nil, fmt.Errorf("%s: give models, devices or both", where)
		}
		for _, dev := range o.Devices {
			if _, err := Device(dev); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		if err := checkParams(o.Params); err != nil {
			return nil, fmt.Errorf("%s: params: %w", where, err)
		}
	}
	for dev, h := range d.HardwareDefaults.Devices {
		if _, err := Device(dev); err != nil {
			return nil, fmt.Errorf("%s: hardware_defaults: %w", file, err)
		}
		if v, err := time.ParseDuration(h.LivenessTimeout); err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: hardware_defaults.%s.liveness_timeout %q: want a positive duration such as \"10m\"", file, dev, h.LivenessTimeout)
		}
	}
	return &d, nil
}

func testNamed(suites []SpecTestSuite, name string) bool {
	for _, s := range suites {
		for _, t := range s.Tests {
			if t.Name == name {
				return true
			}
		}
	}
	return false
}

func classNames() []string {
	var out []string
	for c := range SpecTestClasses {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// classesCover reports whether a template's classes check every model
// type of a suite.
func classesCover(classes, modelTypes []string) bool {
	if slices.Contains(classes, ClassAny) {
		return true
	}
	for _, mt := range modelTypes {
		ok := false
		for _, c := range classes {
			ok = ok || slices.Contains(SpecTestClasses[c], mt)
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkParams checks the ranges and durations of a parameter set.
func checkParams(p SpecTestParams) error {
	for _, v := range p.MaxTokens {
		if v < 1 {
			return fmt.Errorf("max_tokens %d: want 1 or more", v)
		}
	}
	for _, v := range p.N {
		if v < 1 {
			return fmt.Errorf("n %d: want 1 or more", v)
		}
	}
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		return fmt.Errorf("temperature %v: want 0 to 2", *p.Temperature)
	}
	if p.TopLogprobs < 0 || p.Repeats < 0 || p.Concurrency < 0 || p.MaxChars < 0 || p.MaxAudioSeconds < 0 {
		return fmt.Errorf("top_logprobs, repeats, concurrency, max_chars and max_audio_seconds must not be negative")
	}
	for m, s := range p.Durations {
		if _, err := limit.Parse(m); err != nil {
			return fmt.Errorf("durations: %w", err)
		}
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			return fmt.Errorf("durations.%s %q: want a positive duration such as \"10s\"", m, s)
		}
	}
	for name, r := range map[string]*IntRange{"steps": p.Steps, "images": p.Images, "top_k": p.TopK, "inputs": p.Inputs} {
		if r != nil && (r.Min > r.Max || (r.Default != 0 && (r.Default < r.Min || r.Default > r.Max))) {
			return fmt.Errorf("%s: min %d, max %d, default %d out of order", name, r.Min, r.Max, r.Default)
		}
	}
	for name, r := range map[string]*FloatRange{"guidance": p.Guidance, "confidence": p.Confidence} {
		if r != nil && r.Min > r.Max {
			return fmt.Errorf("%s: min %v over max %v", name, r.Min, r.Max)
		}
	}
	for _, s := range p.Sizes {
		if _, _, ok := ParseImageSize(s); !ok {
			return fmt.Errorf("size %q: want WIDTHxHEIGHT", s)
		}
	}
	for _, v := range p.AudioSeconds {
		if v <= 0 {
			return fmt.Errorf("audio_seconds %v: want more than 0", v)
		}
	}
	return nil
}

// ParseImageSize reads "1024x768".
func ParseImageSize(s string) (w, h int, ok bool) {
	a, b, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	return w, h, err1 == nil && err2 == nil && w > 0 && h > 0
}

func specTests() *specTestData {
	d, err := loadSpecTests()
	if err != nil {
		// The embedded file is checked by the package's tests; a
		// broken one is a build defect, not an input error.
		panic(err)
	}
	return d
}

// SpecTestTemplates lists the test templates.
func SpecTestTemplates() []SpecTestTemplate {
	return slices.Clone(specTests().Templates)
}

// SpecTestSuites lists the suites, with each test's parameters merged over
// its template's (before per-model overrides).
func SpecTestSuites() []SpecTestSuite {
	var out []SpecTestSuite
	for _, s := range specTests().Suites {
		out = append(out, s.clone())
	}
	return out
}

func (s SpecTestSuite) clone() SpecTestSuite {
	s.ModelTypes, s.Devices = slices.Clone(s.ModelTypes), slices.Clone(s.Devices)
	tests := make([]SpecTest, len(s.Tests))
	for i, t := range s.Tests {
		t.Limits = slices.Clone(t.Limits)
		t.Params = SpecTestParams{}.over(t.Params)
		tests[i] = t
	}
	s.Tests = tests
	return s
}

// SpecTestSuiteNamed returns the suite of that name, for a model and
// device (the per-model overrides applied; model and device may be empty).
func SpecTestSuiteNamed(name, model, device string) (SpecTestSuite, error) {
	for _, s := range specTests().Suites {
		if s.Name == name {
			return s.clone().applyOverrides(model, device), nil
		}
	}
	return SpecTestSuite{}, fmt.Errorf("no spec-test suite %q (want %s)", name, strings.Join(SpecTestSuiteNames(), ", "))
}

// SpecTestSuiteNames lists the suites' names.
func SpecTestSuiteNames() []string {
	var out []string
	for _, s := range specTests().Suites {
		out = append(out, s.Name)
	}
	return out
}

// SpecTestSuiteFor returns the suite of a spec: the first whose model types
// hold the spec's and whose devices hold its device (or name none), with
// the per-model overrides applied.
func SpecTestSuiteFor(s *Spec) (SpecTestSuite, error) {
	for _, st := range specTests().Suites {
		if slices.Contains(st.ModelTypes, s.ModelType) && (len(st.Devices) == 0 || slices.Contains(st.Devices, s.Device)) {
			return st.clone().applyOverrides(s.ModelName, s.Device), nil
		}
	}
	return SpecTestSuite{}, fmt.Errorf("no spec-test suite for %s models on %s", s.ModelType, s.Device)
}

func (s SpecTestSuite) applyOverrides(model, device string) SpecTestSuite {
	for _, o := range specTests().Overrides {
		if len(o.Models) > 0 && !slices.Contains(o.Models, model) {
			continue
		}
		if len(o.Devices) > 0 && !slices.Contains(o.Devices, device) {
			continue
		}
		for i := range s.Tests {
			if s.Tests[i].Name == o.Test || s.Tests[i].Template == o.Test {
				s.Tests[i].Params = s.Tests[i].Params.over(o.Params)
			}
		}
	}
	return s
}

// SpecTestNames lists every test name of every suite, once each (what a
// unit's [tests] skip may name).
func SpecTestNames() []string {
	var out []string
	for _, s := range specTests().Suites {
		for _, t := range s.Tests {
			if !slices.Contains(out, t.Name) {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

// LivenessTimeout is how long a server on device may take to become
// ready (upstream's liveness retries).
func LivenessTimeout(device string) time.Duration {
	if h, ok := specTests().HardwareDefaults.Devices[device]; ok {
		if d, err := time.ParseDuration(h.LivenessTimeout); err == nil {
			return d
		}
	}
	return DefaultLivenessTimeout
}

// ToolCallParser is the tool-call parser the spec's model is served with
// ("" for none).
func (s *Spec) ToolCallParser() string { return s.Metadata["tool_call_parser_name"] }
