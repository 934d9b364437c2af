package release_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/units/limit"
)

// The names below are what run.py's consumers parse, taken from the seeds
// and the reference notes (../../../shared/reference), not from ttis's own
// structs: seed 001's workflow_logs tree and file names, seed 003's
// benchmark keys, tt-inference-server.md §3.3 (a point's keys), §4.2
// (where lm-eval results are found), §5.1-5.3 (report_data's keys, blocks,
// ReportCheckTypes NA=1 PASS=2 FAIL=3).

// seedBenchmarkName is seed 001's result name,
// benchmark_<model>_<device>_<ts>_isl-<I>_osl-<O>_maxcon-<C>_n-<N>.json.
var seedBenchmarkName = regexp.MustCompile(`^benchmark_([A-Za-z0-9.-]+)_([a-z0-9_]+?)_(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d)_isl-(\d+)_osl-(\d+)_maxcon-(\d+)_n-(\d+)\.json$`)

// TestRunPyConsumersReadARun runs a release against a sim unit and reads
// its run folder the way run.py's report workflow and CI aggregation read
// workflow_logs: benchmark files by their glob and name, lm-eval results by
// their folder, report_data by its name and keys.
func TestRunPyConsumersReadARun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	const model, device, repo = "Llama-3.1-8B-Instruct", "n150", "meta-llama/Llama-3.1-8B-Instruct"
	url := testbin.Serve(t, "model = \""+model+"\"\ndevice = \""+device+"\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: device})
	if err != nil {
		t.Fatal(err)
	}
	ec := release.DefaultEvals()
	ec.Tasks = []string{"gsm8k"}
	ec.Datasets = map[string]string{"gsm8k": filepath.Join("..", "..", "evalsuite", "tasks", "testdata", "gsm8k_test.jsonl")}
	ec.NumFewShot, ec.Concurrency = 0, 2
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowRelease, Limit: limit.Smoke,
		Evals: &ec, Store: &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}, Trigger: "ttisctl"})
	if err != nil {
		t.Fatal(err)
	}
	dir := out.Dir

	// Benchmarks: run.py's report globs benchmark_<model>_<device>_*.json
	// and reads the parameters from each name, the metrics from its keys.
	files, _ := filepath.Glob(filepath.Join(dir, "benchmarks", "benchmark_"+model+"_"+device+"_*.json"))
	if len(files) == 0 {
		t.Fatalf("no benchmark_%s_%s_*.json in %s", model, device, dir)
	}
	for _, f := range files {
		m := seedBenchmarkName.FindStringSubmatch(filepath.Base(f))
		if m == nil || m[1] != model || m[2] != device {
			t.Errorf("%s: not seed 001's name for %s on %s", filepath.Base(f), model, device)
			continue
		}
		var raw map[string]any
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &raw) != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, k := range []string{"model_id", "backend", "mean_ttft_ms", "std_ttft_ms", "mean_tpot_ms", "std_tpot_ms", "mean_e2el_ms",
			"request_throughput", "total_input_tokens", "total_output_tokens", "num_prompts", "completed", "max_concurrency",
			"median_ttft_ms", "p99_ttft_ms", "output_throughput", "total_token_throughput", "failed", "duration"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("%s lacks %q", filepath.Base(f), k)
			}
		}
		n, _ := strconv.Atoi(m[7])
		c, _ := strconv.Atoi(m[6])
		isl, _ := strconv.Atoi(m[4])
		if raw["num_prompts"] != float64(n) || raw["completed"] != float64(n) || raw["max_concurrency"] != float64(c) ||
			raw["total_input_tokens"] != float64(n*isl) {
			t.Errorf("%s: num_prompts %v completed %v max_concurrency %v total_input_tokens %v disagree with its name",
				filepath.Base(f), raw["num_prompts"], raw["completed"], raw["max_concurrency"], raw["total_input_tokens"])
		}
	}

	// Evals: eval_<model>_<device>/<org>__<repo>/results_*.json and
	// samples_<task>_*.jsonl, lm-eval's keys.
	evalDir := filepath.Join(dir, "evals", "eval_"+model+"_"+device, strings.ReplaceAll(repo, "/", "__"))
	results, _ := filepath.Glob(filepath.Join(evalDir, "results_*.json"))
	samples, _ := filepath.Glob(filepath.Join(evalDir, "samples_gsm8k_*.jsonl"))
	if len(results) != 1 || len(samples) != 1 {
		t.Fatalf("results %v, samples %v in %s", results, samples, evalDir)
	}
	var lm struct {
		Results  map[string]map[string]any `json:"results"`
		Configs  map[string]map[string]any `json:"configs"`
		NSamples map[string]map[string]any `json:"n-samples"`
	}
	b, err := os.ReadFile(results[0])
	if err != nil || json.Unmarshal(b, &lm) != nil {
		t.Fatalf("%s: %v", results[0], err)
	}
	if _, ok := lm.Results["gsm8k"]["exact_match,strict-match"].(float64); !ok || lm.Configs["gsm8k"]["task"] != "gsm8k" ||
		lm.NSamples["gsm8k"]["effective"] != 3.0 {
		t.Errorf("lm-eval results: results %v, configs.task %v, n-samples %v", lm.Results["gsm8k"], lm.Configs["gsm8k"]["task"], lm.NSamples["gsm8k"])
	}
	fh, err := os.Open(samples[0])
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lines := 0
	for sc := bufio.NewScanner(fh); sc.Scan(); lines++ {
		var s map[string]any
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("sample line %d: %v", lines+1, err)
		}
		for _, k := range []string{"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter"} {
			if _, ok := s[k]; !ok {
				t.Errorf("sample line %d lacks lm-eval's %q", lines+1, k)
			}
		}
	}
	// One line per document and filter, as lm-eval writes them: gsm8k's
	// three documents under strict-match and flexible-extract.
	if lines != 6 {
		t.Errorf("%d sample lines, want 6", lines)
	}

	// Reports: reports_output/<workflow>/data/report_data_<id>.json beside
	// report_<id>.md, as CI aggregation globs them.
	data, _ := filepath.Glob(filepath.Join(dir, "reports_output", "*", "data", "report_data_*.json"))
	mds, _ := filepath.Glob(filepath.Join(dir, "reports_output", "release", "report_*.md"))
	if len(data) != 1 || len(mds) != 1 {
		t.Fatalf("report data %v, markdown %v", data, mds)
	}
	var rd struct {
		Metadata struct {
			ReportID  string `json:"report_id"`
			ModelName string `json:"model_name"`
			Device    string `json:"device"`
			Workflow  string `json:"workflow"`
		} `json:"metadata"`
		Sections []struct {
			Kind     string         `json:"kind"`
			Title    string         `json:"title"`
			TaskType string         `json:"task_type"`
			ID       string         `json:"id"`
			Data     map[string]any `json:"data"`
		} `json:"sections"`
		Accepted    *bool             `json:"acceptance_criteria"`
		Blockers    map[string]string `json:"acceptance_blockers"`
		Enforcement struct {
			Result     string `json:"enforcement_result"`
			Categories []struct {
				Name     string            `json:"name"`
				Status   string            `json:"status"`
				Total    *int              `json:"total"`
				Passed   *int              `json:"passed"`
				Failed   *int              `json:"failed"`
				NA       *int              `json:"na"`
				Skipped  *int              `json:"skipped"`
				Blockers map[string]string `json:"blockers"`
				Waived   map[string]string `json:"waived"`
			} `json:"categories"`
		} `json:"acceptance_criteria_metadata"`
		Summary           *string          `json:"acceptance_summary_markdown"`
		Benchmarks        []map[string]any `json:"benchmarks"`
		BenchmarksSummary []map[string]any `json:"benchmarks_summary"`
		Evals             []map[string]any `json:"evals"`
	}
	b, err = os.ReadFile(data[0])
	if err != nil || json.Unmarshal(b, &rd) != nil {
		t.Fatalf("%s: %v", data[0], err)
	}
	if filepath.Base(data[0]) != "report_data_"+rd.Metadata.ReportID+".json" || filepath.Base(mds[0]) != "report_"+rd.Metadata.ReportID+".md" ||
		rd.Metadata.ModelName != model || rd.Metadata.Device != device || rd.Metadata.Workflow != "release" {
		t.Errorf("report data %s: metadata %+v", filepath.Base(data[0]), rd.Metadata)
	}
	if rd.Accepted == nil || rd.Summary == nil || rd.Blockers == nil || rd.Enforcement.Result == "" || len(rd.Enforcement.Categories) < 2 {
		t.Errorf("acceptance keys missing: %s", b)
	}
	// run.py's categories are there by their names; a release adds its
	// spec tests as a third, which a parser that knows only two passes over.
	names := map[string]bool{}
	for _, c := range rd.Enforcement.Categories {
		names[c.Name] = true
	}
	if !names["Benchmarks"] || !names["Evals"] {
		t.Errorf("categories %v lack Benchmarks or Evals", names)
	}
	for _, c := range rd.Enforcement.Categories {
		if c.Total == nil || c.Passed == nil || c.Failed == nil || c.NA == nil || c.Skipped == nil || c.Blockers == nil || c.Waived == nil {
			t.Errorf("category %s lacks a key", c.Name)
		}
	}
	check := func(v any) bool { f, ok := v.(float64); return ok && (f == 1 || f == 2 || f == 3) }
	kinds := map[string]int{}
	for _, s := range rd.Sections {
		kinds[s.Kind]++
		if s.ID != model+"_"+device || s.Title == "" || s.TaskType == "" {
			t.Errorf("block %+v", s)
		}
		switch s.Kind {
		case "benchmarks":
			if !check(s.Data["target_check"]) {
				t.Errorf("benchmark block target_check %v", s.Data["target_check"])
			}
			if tc, ok := s.Data["target_checks"].(map[string]any); ok {
				for _, tier := range []string{"functional", "complete", "target"} {
					lv, _ := tc[tier].(map[string]any)
					for _, k := range []string{"ttft_check", "tput_user_check", "tput_check"} {
						if !check(lv[k]) {
							t.Errorf("target_checks.%s.%s = %v", tier, k, lv[k])
						}
					}
				}
			}
			for _, k := range []string{"concurrency", "num_requests", "input_sequence_length", "output_sequence_length", "mean_ttft_ms",
				"p50_ttft", "p99_ttft", "mean_tpot_ms", "mean_e2el_ms", "tps_input_throughput", "tps_output_throughput",
				"tps_total_throughput", "request_throughput"} {
				if _, ok := s.Data[k]; !ok {
					t.Errorf("benchmark block lacks %q", k)
				}
			}
		case "evals":
			for _, k := range []string{"task_name", "tolerance", "published_score", "published_score_ref", "gpu_reference_score",
				"gpu_reference_score_ref", "score", "ratio_to_published", "ratio_to_reference"} {
				if _, ok := s.Data[k]; !ok {
					t.Errorf("eval block lacks %q", k)
				}
			}
			if s.Data["task_name"] == "gsm8k" && !check(s.Data["accuracy_check"]) {
				t.Errorf("gsm8k accuracy_check %v", s.Data["accuracy_check"])
			}
		}
	}
	if kinds["benchmarks"] == 0 || kinds["evals"] == 0 {
		t.Errorf("blocks by kind %v", kinds)
	}
	// What run.py's CI aggregation (scripts/release/workflow_logs_parser.py)
	// reads: the first benchmark summary's tiers, every eval's check, and a
	// "benchmarks" key it deletes.
	if rd.Benchmarks == nil || len(rd.BenchmarksSummary) == 0 || len(rd.Evals) == 0 {
		t.Fatalf("benchmarks %d, benchmarks_summary %d, evals %d", len(rd.Benchmarks), len(rd.BenchmarksSummary), len(rd.Evals))
	}
	tc, _ := rd.BenchmarksSummary[0]["target_checks"].(map[string]any)
	target, _ := tc["target"].(map[string]any)
	for _, k := range []string{"ttft_check", "tput_user_check", "tput_check"} {
		if !check(target[k]) {
			t.Errorf("benchmarks_summary[0].target_checks.target.%s = %v", k, target[k])
		}
	}
	// The sim at time scale 0 beats its targets: CI reads perf "target".
	if target["ttft_check"] != 2.0 || target["tput_user_check"] != 2.0 {
		t.Errorf("benchmarks_summary[0].target_checks.target = %v, want ttft and tput_user PASS (2)", target)
	}
	for _, e := range rd.Evals {
		if e["task_name"] == "ttis_arith" || e["task_name"] == "ttis_arith_mc_generative" {
			t.Errorf("ttis's plumbing task %v is listed among run.py's evals", e["task_name"])
		}
	}
}
