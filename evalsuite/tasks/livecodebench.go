package tasks

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/sandbox"
)

// livecodebench follows tt-inference-server's lm-eval fork
// (tstescoTT/lm-evaluation-harness, main at 83b78bf2, the commit "Fix
// LiveCodeBench Evaluation for datasets 4.0.0 Compatibility"):
// lm_eval/tasks/livecodebench/livecodebench.yaml, utils.py and
// testing_util.py, which in turn follow EvalScope's LiveCodeBench.
//
//   - Data: livecodebench/code_generation_lite test.jsonl, test2.jsonl ...
//     test6.jsonl, every problem of release_v6 (May 2023 to April 2025):
//     the YAML lists those six files and filters no dates.
//   - Prompt (utils.doc_to_text_with_format): the question, then the
//     format block (the starter code, or "# YOUR CODE HERE" for stdin
//     problems), zero-shot, no system prompt; greedy, max_gen_toks 2048,
//     until the three end-of-text markers.
//   - Extraction (extract_code_generation, model_type chat): the lines
//     between the first two lines that contain ```; fewer than two such
//     lines is no code.
//   - Grading (testing_util.run_test with timeout 6): public then private
//     tests. A problem whose metadata names func_name is call-based
//     (class Solution's method, arguments one JSON value per input line,
//     result == the JSON output, a tuple counting as a list); otherwise
//     the program is wrapped into a function and run once per test with
//     the input as stdin, its output compared line by line after strip,
//     lines equal as text or as lists of Decimals. Each test has 6 s;
//     the whole run (6+1) s per test. acc = pass@1 = 1 when every test
//     passes.
//
// ttis runs the grading harness (lcbharness.py, written for ttis) in
// evalsuite/sandbox with a 4 GiB address-space limit (the fork sets
// none); the fork's multiprocessing child runs unconfined. Where the
// fork's grader crashes on a malformed row it counts the problem as
// failed silently (private tests that do not decode become no tests);
// ttis reports the row as an error naming its field instead.
func init() {
	register(Info{Name: "livecodebench", Output: evalsuite.GenerateUntil,
		Description: "LiveCodeBench code generation (release_v6, 1055 problems), graded in the sandbox by running its stdin/stdout and call-based tests, pass@1 as acc (fields question_content, starter_code, public_test_cases, private_test_cases, metadata); needs python3",
		Follows:     "tt-inference-server's lm-eval fork (tstescoTT/lm-evaluation-harness main 83b78bf2) lm_eval/tasks/livecodebench/livecodebench.yaml, utils.py, testing_util.py",
		// test.jsonl and test2.jsonl to test6.jsonl: a later release's
		// test7.jsonl is not part of release_v6 and is not pulled.
		Data: []HubData{{Role: RoleTest, Repo: "livecodebench/code_generation_lite", Split: "test", Files: "test[.2-6]*jsonl"}}}, buildLiveCodeBench)
}

// lcbFiles are the files the fork's YAML loads, in its order.
var lcbFiles = []string{"test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"}

// lcbTimeout is run_test's per-test time limit.
const lcbTimeout = 6

const (
	lcbWithStarter    = "You will use the following starter code to write the solution to the problem and enclose your code within delimiters."
	lcbWithoutStarter = "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the sample inputs). Enclose your code within delimiters as follows."
)

//go:embed lcbharness.py
var lcbHarness string

func buildLiveCodeBench(src Source) (*evalsuite.Task, error) {
	docs, err := loadLCB(src)
	if err != nil {
		return nil, err
	}
	until := []string{"<|end_of_text|>", "<|endoftext|>", "<|im_end|>"}
	return &evalsuite.Task{
		Name: "livecodebench", Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText:   lcbPrompt,
		DocToTarget: func(d evalsuite.Doc) (string, error) { return d.Str("question_id") },
		Gen:         evalsuite.GenKwargs{Until: until, MaxGenToks: 2048, Temperature: 0},
		Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
			p, err := lcbGrade(context.Background(), d, ExtractLCBCode(resp))
			return evalsuite.Scores{"acc": {p}}, err
		},
		Metrics: []evalsuite.MetricSpec{{Name: "acc", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "livecodebench", "dataset_path": "livecodebench/code_generation_lite", "output_type": "generate_until",
			"dataset_kwargs": map[string]any{"data_files": map[string]any{"test": lcbFiles}}, "validation_split": "test",
			"doc_to_text": "utils.doc_to_text_with_format", "doc_to_target": "utils.doc_to_target", "process_results": "utils.process_results",
			"num_fewshot":       0,
			"generation_kwargs": map[string]any{"until": until, "do_sample": false, "max_gen_toks": 2048},
			"metric_list":       []map[string]any{{"metric": "acc", "aggregation": "mean", "higher_is_better": true}},
			"metadata":          map[string]any{"version": 1.0},
			"sandbox":           fmt.Sprintf("evalsuite/sandbox: lcbharness.py, %d s per test, (%d+1) s per test in all, 4 GiB address space, rlimits, private dir, no network where the kernel allows", lcbTimeout, lcbTimeout),
		},
	}, nil
}

// lcbPrompt is utils.doc_to_text_with_format.
func lcbPrompt(d evalsuite.Doc) (string, error) {
	q, err := d.Str("question_content")
	if err != nil {
		return "", err
	}
	starter, _ := d.Fields["starter_code"].(string)
	var format string
	if starter != "" {
		format = "### Format: " + lcbWithStarter + "\n```python\n" + starter + "\n```\n\n"
	} else {
		format = "### Format: " + lcbWithoutStarter + "\n```python\n# YOUR CODE HERE\n```\n\n"
	}
	return "### Question:\n" + q + "\n\n" + format + " ### Answer: (use the provided format with backticks)\n\n", nil
}

// ExtractLCBCode is extract_code_generation for chat models: the lines
// between the first two lines containing ```, or "" without two.
func ExtractLCBCode(resp string) string {
	lines := strings.Split(resp, "\n")
	var fences []int
	for i, l := range lines {
		if strings.Contains(l, "```") {
			fences = append(fences, i)
			if len(fences) == 2 {
				return strings.Join(lines[fences[0]+1:fences[1]], "\n")
			}
		}
	}
	return ""
}

// lcbCase is what the harness receives.
type lcbCase struct {
	Code    string   `json:"code"`
	FnName  *string  `json:"fn_name"`
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	Timeout int      `json:"timeout"`
}

// lcbCaseOf gathers a problem's tests and entry point (the fork's
// transform_data_item): public tests, then private ones.
func lcbCaseOf(d evalsuite.Doc) (lcbCase, error) {
	var c lcbCase
	pub, err := d.Str("public_test_cases")
	if err != nil {
		return c, err
	}
	var public []lcbTest
	if err := json.Unmarshal([]byte(pub), &public); err != nil {
		return c, fmt.Errorf("%s: field \"public_test_cases\" is not a JSON list of tests: %w", d.Source, err)
	}
	priv, err := lcbPrivateField(d)
	if err != nil {
		return c, err
	}
	private, err := decodeLCBPrivateTests(priv)
	if err != nil {
		return c, fmt.Errorf("%s: field \"private_test_cases\": %w", d.Source, err)
	}
	meta, _ := d.Fields["metadata"].(string)
	var m struct {
		FuncName *string `json:"func_name"`
	}
	if meta != "" {
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			return c, fmt.Errorf("%s: field \"metadata\" is not a JSON object: %w", d.Source, err)
		}
	}
	c.FnName = m.FuncName
	for _, t := range append(public, private...) {
		c.Inputs = append(c.Inputs, t.Input)
		c.Outputs = append(c.Outputs, t.Output)
	}
	c.Timeout = lcbTimeout
	return c, nil
}

// lcbProgram is the harness's call; the case travels as case.json
// beside it, so that test data of tens of megabytes is not compiled as
// Python source.
const lcbProgram = "\nmain(\"case.json\")\n"

// lcbRunners are sandbox runners by whole-run time limit ((6+1) s per
// test, as codegen_check_correctness joins its process).
var lcbRunners = struct {
	mu sync.Mutex
	m  map[time.Duration]*sandbox.Runner
}{m: map[time.Duration]*sandbox.Runner{}}

func lcbRunner(timeout time.Duration) (*sandbox.Runner, error) {
	lcbRunners.mu.Lock()
	defer lcbRunners.mu.Unlock()
	if r, ok := lcbRunners.m[timeout]; ok {
		return r, nil
	}
	lim := sandbox.DefaultLimits()
	lim.Timeout = timeout
	lim.MemoryBytes = 4 << 30
	r, err := sandbox.New(lim)
	if err != nil {
		return nil, err
	}
	lcbRunners.m[timeout] = r
	return r, nil
}

// lcbGrade runs code against the problem's tests: 1 when all pass.
func lcbGrade(ctx context.Context, d evalsuite.Doc, code string) (float64, error) {
	c, err := lcbCaseOf(d)
	if err != nil {
		return 0, err
	}
	c.Code = code
	js, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	r, err := lcbRunner(time.Duration(lcbTimeout+1) * time.Duration(max(len(c.Inputs), 1)) * time.Second)
	if err != nil {
		return 0, err
	}
	res, err := r.RunWith(ctx, lcbHarness+lcbProgram, map[string][]byte{"case.json": js})
	if err != nil {
		return 0, err
	}
	if res.Status == sandbox.Passed {
		return 1, nil
	}
	return 0, nil
}
