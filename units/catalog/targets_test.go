package catalog

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// runpySpec is one spec as run.py's own catalog code expands it:
// testdata/runpy_perf_reference.json is the output of loading
// workflows.model_spec.MODEL_SPECS of tt-inference-server 11ac526e0 with
// Python and writing, per spec, model_name, device, impl_name,
// data_parallel_size and perf_reference (each point's isl, osl,
// max_concurrency, num_prompts and its "target" tier, which is the
// theoretical target).
type runpySpec struct {
	Model string `json:"model_name"`
	Dev   string `json:"device"`
	Impl  string `json:"impl"`
	DP    *int   `json:"data_parallel"`
	Refs  []struct {
		Task       string   `json:"task_type"`
		ISL        *int     `json:"isl"`
		OSL        *int     `json:"osl"`
		MaxConc    *int     `json:"max_concurrency"`
		NumPrompts *int     `json:"num_prompts"`
		TTFTms     *float64 `json:"ttft_ms"`
		TputUser   *float64 `json:"tput_user"`
		Tput       *float64 `json:"tput"`
	} `json:"perf_reference"`
}

func intOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func floatOr0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// ownTableOverDataParallel are the specs ttis grades on their own device's
// table where run.py (11ac526e0) grades them on the data-parallel
// sub-device's, scaled: seed 003 documents Llama-3.3-70B's galaxy table
// (2048/128 included) as the galaxy's targets, and a device's own table is
// what the reference measured on that device.
var ownTableOverDataParallel = map[string]bool{
	"gpt-oss-20b galaxy gpt-oss":                             true,
	"gpt-oss-120b galaxy gpt-oss":                            true,
	"Qwen3-32B galaxy tt-transformers":                       true,
	"Qwen3-32B galaxy qwen3-32b-galaxy":                      true,
	"Llama-3.3-70B-Instruct galaxy llama3-70b-galaxy":        true,
	"Llama-3.1-70B galaxy llama3-70b-galaxy":                 true,
	"Llama-3.1-70B-Instruct galaxy llama3-70b-galaxy":        true,
	"DeepSeek-R1-Distill-Llama-70B galaxy llama3-70b-galaxy": true,
	"Llama-3.1-8B galaxy tt-transformers":                    true,
	"Llama-3.1-8B-Instruct galaxy tt-transformers":           true,
	"Llama-3.1-8B p150x8 tt-transformers":                    true,
	"Llama-3.1-8B-Instruct p150x8 tt-transformers":           true,
	"gemma-3-27b-it galaxy tt-transformers":                  true,
	"medgemma-27b-it galaxy tt-transformers":                 true,
}

// TestTargetsAgainstRunPy checks every catalog spec's targets against the
// ones run.py's own code gives it: the same points, prompt counts and
// theoretical values, read under the template's first weight. The only
// departures are the specs listed in ownTableOverDataParallel, and each of
// those must really be one: a data-parallel spec whose device has a table.
func TestTargetsAgainstRunPy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "runpy_perf_reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref []runpySpec
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]runpySpec{}
	for _, r := range ref {
		byKey[r.Model+" "+r.Dev+" "+r.Impl] = r
	}
	specs := Specs()
	if len(specs) != len(ref) {
		t.Errorf("%d specs, run.py expands %d", len(specs), len(ref))
	}
	departed := map[string]bool{}
	for _, s := range specs {
		key := s.ModelName + " " + s.Device + " " + s.ImplName
		r, ok := byKey[key]
		if !ok {
			t.Errorf("%s: run.py has no such spec", key)
			continue
		}
		if ownTableOverDataParallel[key] {
			departed[key] = true
			if r.DP == nil || *r.DP <= 1 || s.TargetsDevice != s.Device {
				t.Errorf("%s is listed as graded on its own table over run.py's data-parallel sub-device, but dp=%v and ttis reads %q", key, r.DP, s.TargetsDevice)
			}
			continue
		}
		if len(s.Targets) != len(r.Refs) {
			t.Errorf("%s: %d targets, run.py %d", key, len(s.Targets), len(r.Refs))
			continue
		}
		for i, want := range r.Refs {
			got := s.Targets[i]
			if got.ISL != intOr0(want.ISL) || got.OSL != intOr0(want.OSL) || max(got.Concurrency, 1) != max(intOr0(want.MaxConc), 1) {
				t.Errorf("%s target %d: isl %d osl %d c %d, run.py %d/%d/%d", key, i, got.ISL, got.OSL, got.Concurrency, intOr0(want.ISL), intOr0(want.OSL), intOr0(want.MaxConc))
			}
			if isTextTask(got.Task) && got.NumPrompts != intOr0(want.NumPrompts) {
				t.Errorf("%s target %d: num_prompts %d, run.py %d", key, i, got.NumPrompts, intOr0(want.NumPrompts))
			}
			for _, m := range []struct {
				name      string
				got, want float64
			}{{"ttft_ms", got.TTFTms, floatOr0(want.TTFTms)}, {"tput_user", got.TputUser, floatOr0(want.TputUser)}, {"tput", got.Tput, floatOr0(want.Tput)}} {
				if math.Abs(m.got-m.want) > 1e-9*math.Max(1, math.Abs(m.want)) {
					t.Errorf("%s target %d (%d/%d): %s %v, run.py %v", key, i, got.ISL, got.OSL, m.name, m.got, m.want)
				}
			}
		}
	}
	for key := range ownTableOverDataParallel {
		if !departed[key] {
			t.Errorf("%s is listed as a departure from run.py but is not in the catalog", key)
		}
	}
}

func isTextTask(task string) bool { return task == "" || task == "text" || task == "vlm" }

// TestWhichTargetsGradeEachSpec pins, for every catalog spec (prod and
// dev), which device's table its targets come from and under which
// reference key: testdata/targets_device.golden (go test -update rewrites
// it; read the diff). A spec without targets says so.
func TestWhichTargetsGradeEachSpec(t *testing.T) {
	var sb strings.Builder
	for _, mode := range []string{ModeProd, ModeDev} {
		specs, err := SpecsIn(mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			src := "no targets"
			if s.TargetsDevice != "" {
				var pts []string
				for _, p := range s.Targets {
					pt := fmt.Sprintf("%d/%d c%d", p.ISL, p.OSL, p.Concurrency)
					if p.NumPrompts > 0 {
						pt += fmt.Sprintf(" n%d", p.NumPrompts)
					}
					pts = append(pts, pt)
				}
				src = fmt.Sprintf("%s[%s]: %s", s.TargetsModel, s.TargetsDevice, strings.Join(pts, "; "))
			}
			fmt.Fprintf(&sb, "%s %s %s %s -> %s\n", mode, s.ModelName, s.Device, s.ImplName, src)
			if s.TargetsDevice != "" && s.TargetsDevice != s.Device && s.TargetsDevice != s.SubDevice {
				t.Errorf("%s on %s is graded on %s's table, which is neither its device nor its sub-device", s.ModelName, s.Device, s.TargetsDevice)
			}
			if (s.TargetsDevice == "") != (len(s.Targets) == 0) {
				t.Errorf("%s on %s: targets device %q with %d targets", s.ModelName, s.Device, s.TargetsDevice, len(s.Targets))
			}
		}
	}
	path := filepath.Join("testdata", "targets_device.golden")
	got := sb.String()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("which targets grade each spec changed (go test -update rewrites %s):\n%s", path, got)
	}
}

// TestGalaxyLlama70BHasItsGalaxyTable is issue 27's acceptance point: the
// galaxy Llama-3.3-70B spec carries seed 003's galaxy table, 2048/128
// included, not the t3k one.
func TestGalaxyLlama70BHasItsGalaxyTable(t *testing.T) {
	s, err := Lookup("Llama-3.3-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	want := []PerfTarget{
		{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, TTFTms: 50, TputUser: 80, Task: "text"},
		{ISL: 2048, OSL: 128, Concurrency: 1, NumPrompts: 8, TTFTms: 800, TputUser: 80, Task: "text"},
	}
	if s.TargetsDevice != "galaxy" || fmt.Sprint(s.Targets) != fmt.Sprint(want) {
		t.Errorf("galaxy Llama-3.3-70B targets from %q: %+v, want the galaxy table %+v", s.TargetsDevice, s.Targets, want)
	}
}

// TestDataParallelWithoutOwnTable: a data-parallel spec whose device has
// no table of its own is graded on its sub-device's, throughput and
// batched concurrency scaled by the replica count, prompt count kept (as
// run.py's scale_llm_perf_targets does).
func TestDataParallelWithoutOwnTable(t *testing.T) {
	s, err := LookupIn(ModeDev, "Llama-3.3-70B-Instruct", "blackhole_galaxy")
	if err != nil {
		t.Fatal(err)
	}
	want := []PerfTarget{{ISL: 128, OSL: 128, Concurrency: 32 * 4, NumPrompts: 256, TTFTms: 64, TputUser: 18, Task: "text"}}
	if s.DataParallel != 4 || s.TargetsDevice != "p150x8" || fmt.Sprint(s.Targets) != fmt.Sprint(want) {
		t.Errorf("dp %d, targets from %q: %+v, want p150x8's scaled %+v", s.DataParallel, s.TargetsDevice, s.Targets, want)
	}
}

func TestTargetKeys(t *testing.T) {
	s, err := Lookup("Llama-3.1-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(TargetKeys("meta-llama/Llama-3.1-70B-Instruct", s), ",")
	want := "meta-llama/Llama-3.1-70B-Instruct,Llama-3.1-70B-Instruct,Llama-3.3-70B-Instruct,Llama-3.1-70B,DeepSeek-R1-Distill-Llama-70B,Llama-3.3-70B"
	if got != want {
		t.Errorf("TargetKeys = %s\nwant %s", got, want)
	}
	if got := strings.Join(TargetKeys("my-model", nil), ","); got != "my-model" {
		t.Errorf("TargetKeys without a spec = %s", got)
	}
	if got := TargetKeys("", nil); len(got) != 0 {
		t.Errorf("TargetKeys of nothing = %q", got)
	}
}
