package release_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// The Parquet schemas of the Hub copies, as the fixtures' JSON rows (the
// Hub's columns) hold them.
type (
	metaChoices struct {
		A string `parquet:"A" json:"A"`
		B string `parquet:"B" json:"B"`
		C string `parquet:"C" json:"C"`
		D string `parquet:"D" json:"D"`
	}
	// meta-llama/<model>-evals, config <model>-evals__gpqa__details.
	metaGPQADetail struct {
		InputQuestion         string      `parquet:"input_question" json:"input_question"`
		InputCorrectResponses []string    `parquet:"input_correct_responses,list" json:"input_correct_responses"`
		InputFinalPrompts     []string    `parquet:"input_final_prompts,list" json:"input_final_prompts"`
		InputChoiceList       metaChoices `parquet:"input_choice_list" json:"input_choice_list"`
		IsCorrect             bool        `parquet:"is_correct" json:"is_correct"`
		InputQuestionHash     string      `parquet:"input_question_hash" json:"input_question_hash"`
		OutputPredictionText  []string    `parquet:"output_prediction_text,list" json:"output_prediction_text"`
	}
	// meta-llama/<model>-evals, config <model>-evals__math__details.
	metaMathDetail struct {
		TaskType              string   `parquet:"task_type" json:"task_type"`
		TaskName              string   `parquet:"task_name" json:"task_name"`
		SubtaskName           string   `parquet:"subtask_name" json:"subtask_name"`
		InputQuestion         string   `parquet:"input_question" json:"input_question"`
		InputFinalPrompts     []string `parquet:"input_final_prompts,list" json:"input_final_prompts"`
		InputCorrectResponses []string `parquet:"input_correct_responses,list" json:"input_correct_responses"`
		OutputPredictionText  []string `parquet:"output_prediction_text,list" json:"output_prediction_text"`
		OutputParsedAnswer    string   `parquet:"output_parsed_answer" json:"output_parsed_answer"`
		IsCorrect             bool     `parquet:"is_correct" json:"is_correct"`
		InputQuestionHash     string   `parquet:"input_question_hash" json:"input_question_hash"`
		BenchmarkLabel        string   `parquet:"benchmark_label" json:"benchmark_label"`
	}
	// DigitalLearningGmbH/MATH-lighteval, config default.
	mathRow struct {
		Problem  string `parquet:"problem" json:"problem"`
		Level    string `parquet:"level" json:"level"`
		Solution string `parquet:"solution" json:"solution"`
		Type     string `parquet:"type" json:"type"`
	}
)

// parquetOf converts a JSON Lines fixture of evalsuite/tasks into Parquet
// with schema T.
func parquetOf[T any](t *testing.T, fixture string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "evalsuite", "tasks", "testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row T
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		rows = append(rows, row)
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNightlyReleasePullsReferenceDataFromTheHub runs a scheduled-style
// release (workflow release, trigger schedule) on a sim unit of
// Llama-3.2-3B-Instruct, whose catalog references are meta_gpqa, meta_math
// (Meta's gated per-model sets plus the MATH test split) and livecodebench
// (livecodebench/code_generation_lite's JSONL files, graded in the
// sandbox). The datasets come from the fake Hub and every reference is
// measured.
func TestNightlyReleasePullsReferenceDataFromTheHub(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	const model = "Llama-3.2-3B-Instruct"
	var refs []string
	for _, r := range catalog.ModelEvalRefs(model) {
		refs = append(refs, r.Task)
	}
	if strings.Join(refs, ",") != "meta_gpqa,meta_math,livecodebench" {
		t.Fatalf("the catalog's references for %s changed: %v", model, refs)
	}
	fake := hubtest.New(t)
	evals := "meta-llama/" + model + "-evals"
	fake.SetBranch("dataset", evals, "refs/convert/parquet", []hubtest.File{
		{Path: model + "-evals__gpqa__details/latest/0000.parquet", Content: parquetOf[metaGPQADetail](t, "meta_gpqa_details.jsonl"), LFS: true},
		{Path: model + "-evals__math__details/latest/0000.parquet", Content: parquetOf[metaMathDetail](t, "meta_math_details.jsonl"), LFS: true},
	})
	fake.Gate("dataset", evals, "hf_nightly")
	fake.SetBranch("dataset", "DigitalLearningGmbH/MATH-lighteval", "refs/convert/parquet", []hubtest.File{
		{Path: "default/test/0000.parquet", Content: parquetOf[mathRow](t, "math_lighteval_test.jsonl"), LFS: true},
	})
	lcb, err := os.ReadFile(filepath.Join("..", "..", "evalsuite", "tasks", "testdata", "livecodebench_test.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fake.SetBranch("dataset", "livecodebench/code_generation_lite", "main", []hubtest.File{{Path: "test.jsonl", Content: lcb, LFS: true}})
	cache := filepath.Join(t.TempDir(), "hub")
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, Token: "hf_nightly", CacheDir: cache, MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	url := testbin.Serve(t, "model = \""+model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke,
		Store: store, Trigger: "schedule", Hub: hc})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]release.EvalRow{}
	for _, r := range out.Report.Evals.Rows {
		rows[r.Task] = r
	}
	for _, task := range []string{"meta_gpqa", "meta_math", "livecodebench"} {
		r := rows[task]
		if r.NotRun != "" || r.Samples == 0 || r.Role != release.RoleReference {
			t.Errorf("%s was not measured from the Hub data: %+v", task, r)
		}
	}
	t.Logf("verdict %s: %s", out.Report.Acceptance.Verdict, out.Report.Acceptance.Summary)
	missing, _ := json.Marshal(out.Report.Acceptance.Missing)
	if strings.Contains(string(missing), "livecodebench") {
		t.Errorf("acceptance lists livecodebench as missing: %s", missing)
	}
	// The run records where its data came from.
	data, err := os.ReadFile(filepath.Join(out.Dir, "evals", workflow.DataFileName))
	if err != nil || !strings.Contains(string(data), evals) || !strings.Contains(string(data), `"commit"`) {
		t.Errorf("datasets.json: %v\n%s", err, data)
	}
	for _, r := range fake.Requests() {
		if r.Server == "cdn" && r.Authorization != "" {
			t.Errorf("the CDN received the token: %s", r.Path)
		}
	}

	// Offline, the same run reads the cache; with an empty cache, the
	// references are not measured and the reason names the pull command.
	offline, _ := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: cache, Offline: true})
	out, err = release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke, Store: store, Hub: offline})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Report.Evals.Rows {
		if (r.Task == "meta_gpqa" || r.Task == "meta_math") && r.NotRun != "" {
			t.Errorf("offline with a pulled cache: %s not run: %s", r.Task, r.NotRun)
		}
	}
	empty, _ := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: t.TempDir(), Offline: true})
	out, err = release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke, Store: store, Hub: empty})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Report.Evals.Rows {
		if r.Task == "meta_gpqa" && (r.Fix != "ttisctl dataset pull meta_gpqa --catalog-model "+model || !strings.Contains(r.NotRunCause, "offline") ||
			!strings.Contains(r.NotRun, model+"-evals__gpqa__details")) {
			t.Errorf("offline with an empty cache: meta_gpqa %q (%q), fix %q; want its split, offline and the pull command", r.NotRun, r.NotRunCause, r.Fix)
		}
	}
	if v := out.Report.Acceptance.Verdict; v != release.VerdictIncomplete && v != release.VerdictFail {
		t.Errorf("offline with an empty cache: verdict %s", v)
	}
}

// longbenchRow is Xnhyacinth/LongBench's Parquet schema (one config per
// subtask, split test).
type longbenchRow struct {
	ID         string   `parquet:"_id" json:"_id"`
	Input      string   `parquet:"input" json:"input"`
	Question   string   `parquet:"question" json:"question"`
	Context    string   `parquet:"context" json:"context"`
	Answers    []string `parquet:"answers,list" json:"answers"`
	AllClasses []string `parquet:"all_classes,list" json:"all_classes"`
	Length     int64    `parquet:"length" json:"length"`
	Dataset    string   `parquet:"dataset" json:"dataset"`
	Language   string   `parquet:"language" json:"language"`
}

// TestReleaseOfTheMostCommonUnit: Llama-3.1-8B-Instruct's references are
// meta_ifeval, meta_gpqa_cot and six LongBench-E groups. The fake Hub
// serves Meta's GPQA details and every LongBench subtask's split, but not
// Meta's IFEval details: seven references are measured from pulled data,
// and meta_ifeval is listed as not measured, naming the missing split.
func TestReleaseOfTheMostCommonUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	const model = "Llama-3.1-8B-Instruct"
	fake := hubtest.New(t)
	evals := "meta-llama/" + model + "-evals"
	fake.SetBranch("dataset", evals, "refs/convert/parquet", []hubtest.File{
		{Path: model + "-evals__gpqa__details/latest/0000.parquet", Content: parquetOf[metaGPQADetail](t, "meta_gpqa_details.jsonl"), LFS: true},
	})
	var lb []hubtest.File
	for _, ref := range catalog.ModelEvalRefs(model) {
		if !strings.HasPrefix(ref.Task, "longbench_") {
			continue
		}
		splits, err := taskdata.Plan(ref.Task, "meta-llama/"+model)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range splits {
			fixture := "longbench_qasper_e.jsonl"
			switch s.Config {
			case "trec_e":
				fixture = "longbench_trec_e.jsonl"
			case "lcc_e", "repobench-p_e":
				fixture = "longbench_lcc_e.jsonl"
			}
			lb = append(lb, hubtest.File{Path: strings.TrimSuffix(s.Files, "*.parquet") + "0000.parquet", Content: parquetOf[longbenchRow](t, fixture), LFS: true})
		}
	}
	fake.SetBranch("dataset", "Xnhyacinth/LongBench", "refs/convert/parquet", lb)
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, Token: "hf_nightly", CacheDir: t.TempDir(), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url := testbin.Serve(t, "model = \""+model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke,
		Store: &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}, Trigger: "schedule", Hub: hc})
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, r := range out.Report.Evals.Rows {
		switch {
		case r.Task == "meta_ifeval":
			if !strings.HasPrefix(r.NotRun, "no data: ") || !strings.Contains(r.NotRun, "ifeval__strict__details") || r.NotRunCause == "" ||
				r.Fix != "ttisctl dataset pull meta_ifeval --catalog-model "+model {
				t.Errorf("meta_ifeval: %q (%q), fix %q; want the missing split named, why, and the pull command", r.NotRun, r.NotRunCause, r.Fix)
			}
		case r.Role == release.RoleReference && r.NotRun == "" && r.Samples > 0:
			measured++
		default:
			t.Errorf("%s (%s) not measured: %s", r.Task, r.Role, r.NotRun)
		}
	}
	if measured != 7 {
		t.Errorf("%d references measured from the Hub, want 7", measured)
	}
	t.Logf("verdict %s: %s", out.Report.Acceptance.Verdict, out.Report.Acceptance.Summary)
	if out.Report.Acceptance.Verdict == release.VerdictPass {
		t.Error("PASS with a reference not measured")
	}
}

// logLines is a release.Progress that keeps the run's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}
func (l *logLines) Step(string, int) {}
func (l *logLines) Done(int)         {}

// A release on a host that cannot reach the Hub says so once, in its log,
// report.md and report.html alike: one line with the endpoint and the
// network's error, then each reference task that could not be measured
// with its own data (never the first task's), then the one command that
// fetches them all. The endpoint is tried for one task only.
func TestReleaseWithoutTheHubSaysItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	const model = "Llama-3.1-8B-Instruct"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	hc, err := hub.New(hub.Config{Endpoint: closed, CacheDir: t.TempDir(), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url := testbin.Serve(t, "model = \""+model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	log := &logLines{}
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Smoke,
		Store: &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}, Hub: hc, Progress: log})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, r := range catalog.ModelEvalRefs(model) {
		refs = append(refs, r.Task)
	}
	if len(refs) < 2 {
		t.Fatalf("the catalog's references for %s changed: %v", model, refs)
	}
	cause := "the Hub could not be reached: " + closed
	fix := "ttisctl dataset pull " + strings.Join(refs, " ") + " --catalog-model " + model
	md, _ := os.ReadFile(filepath.Join(out.Dir, release.ReportMarkdown))
	page, _ := os.ReadFile(filepath.Join(out.Dir, release.ReportHTML))
	logText := strings.Join(log.lines, "\n")
	notMeasured := string(md)[strings.Index(string(md), "#### Not measured"):]
	notMeasured = notMeasured[:strings.Index(notMeasured, "\n---")]
	for name, text := range map[string]string{"log": logText, "report.md": notMeasured, "report.html": string(page)} {
		if n := strings.Count(text, cause); n != 1 {
			t.Errorf("%s says %q %d times, want once:\n%s", name, cause, n, text)
		}
		if n := strings.Count(text, fix); n != 1 {
			t.Errorf("%s gives the fix %d times, want once: %q\n%s", name, n, fix, text)
		}
		for _, task := range refs {
			if !strings.Contains(text, task) {
				t.Errorf("%s does not name %s", name, task)
			}
		}
		if strings.Contains(text, "task meta_ifeval,") {
			t.Errorf("%s reuses the first task's error:\n%s", name, text)
		}
	}
	// Each task's line names its own data.
	for _, line := range strings.Split(notMeasured, "\n") {
		for _, task := range refs {
			if strings.Contains(line, "`evals:"+task+"`") && strings.HasPrefix(task, "longbench_") && !strings.Contains(line, "Xnhyacinth/LongBench") {
				t.Errorf("%s's line names other data: %s", task, line)
			}
		}
	}
	for _, r := range out.Report.Evals.Rows {
		if slices.Contains(refs, r.Task) && (r.NotRunCause == "" || !strings.HasPrefix(r.Fix, "ttisctl dataset pull "+r.Task)) {
			t.Errorf("%s: not run %q, cause %q, fix %q", r.Task, r.NotRun, r.NotRunCause, r.Fix)
		}
	}
}
