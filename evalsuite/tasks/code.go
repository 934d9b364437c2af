package tasks

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/sandbox"
)

// The code tasks score a completion by running it with the task's tests
// in package sandbox, as lm-eval scores them with HuggingFace evaluate's
// code_eval: the check program is the candidate, a newline and the test
// code; it passes when it runs to its end within 3 seconds. pass@1 with
// one sample per problem is the mean of the passes.

func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "mbpp_instruct", Output: gen,
		Description: "MBPP, 3-shot instruct prompt answered in a ```python block, pass_at_1 by running the code with the row's three asserts in the sandbox (fields text, code, test_list); needs python3",
		Follows:     "lm-eval lm_eval/tasks/mbpp/mbpp_instruct.yaml v1.0 and utils.py",
		Data:        []HubData{{Role: RoleTest, Repo: "google-research-datasets/mbpp", Config: "full", Split: "test", Files: "full/test-*.parquet"}}}, buildMBPPInstruct)
	register(Info{Name: "humaneval_instruct", Output: gen,
		Description: "HumanEval, instruct prompt with the completed-function prefix, pass@1 by running prompt+completion with the row's check() in the sandbox (fields prompt, test, entry_point); needs python3",
		Follows:     "lm-eval fork lm_eval/tasks/humaneval/humaneval_instruct.yaml v3.0 (humaneval.yaml, utils.py)",
		Data:        []HubData{{Role: RoleTest, Repo: "openai/openai_humaneval", Config: "openai_humaneval", Split: "test", Files: "openai_humaneval/test-*.parquet"}}}, buildHumanEvalInstruct)
}

// codeRunner is the sandbox the code tasks share, made on first use so
// that listing tasks needs no python3.
var codeRunner = struct {
	once sync.Once
	r    *sandbox.Runner
	err  error
}{}

func sandboxRunner() (*sandbox.Runner, error) {
	codeRunner.once.Do(func() { codeRunner.r, codeRunner.err = sandbox.New(sandbox.DefaultLimits()) })
	return codeRunner.r, codeRunner.err
}

// passAt1 runs candidate + "\n" + tests and returns 1 when it passes.
func passAt1(candidate, tests string) (float64, error) {
	r, err := sandboxRunner()
	if err != nil {
		return 0, err
	}
	res, err := r.Run(context.Background(), candidate+"\n"+tests)
	if err != nil {
		return 0, err
	}
	if res.Status == sandbox.Passed {
		return 1, nil
	}
	return 0, nil
}

// mbppFewShot are utils.list_fewshot_samples: (text, code, tests).
var mbppFewShot = []struct {
	text, code string
	tests      []string
}{
	{"Write a function to find the similar elements from the given two tuple lists.", "def similar_elements(test_tup1, test_tup2):\r\n  res = tuple(set(test_tup1) & set(test_tup2))\r\n  return (res) ",
		[]string{"assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)", "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)", "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)"}},
	{"Write a python function to identify non-prime numbers.", "import math\r\ndef is_not_prime(n):\r\n    result = False\r\n    for i in range(2,int(math.sqrt(n)) + 1):\r\n        if n % i == 0:\r\n            result = True\r\n    return result",
		[]string{"assert is_not_prime(2) == False", "assert is_not_prime(10) == True", "assert is_not_prime(35) == True"}},
	{"Write a function to find the largest integers from a given list of numbers using heap queue algorithm.", "import heapq as hq\r\ndef heap_queue_largest(nums,n):\r\n  largest_nums = hq.nlargest(n, nums)\r\n  return largest_nums",
		[]string{"assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],3)==[85, 75, 65] ", "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],2)==[85, 75] ", "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],5)==[85, 75, 65, 58, 35]"}},
}

// mbppTests is "{{test_list[0]}}\n{{test_list[1]}}\n{{test_list[2]}}".
func mbppTests(d evalsuite.Doc) (string, error) {
	tests, err := d.Strings("test_list")
	if err != nil {
		return "", err
	}
	if len(tests) < 3 {
		return "", fmt.Errorf("%s: field \"test_list\" has %d tests, the prompt shows 3", d.Source, len(tests))
	}
	return tests[0] + "\n" + tests[1] + "\n" + tests[2], nil
}

var (
	codeBlockRe = regexp.MustCompile("(?s)```(?:\\w+)?\\n?(.*?)\\n?```")
	pythonFence = regexp.MustCompile("```python")
)

// ExtractCodeBlock is mbpp's extract_code_blocks: the first ``` block of
// "```" + text (the prompt ended with the opening fence), else of the
// text with "```python" fences made plain, else "".
func ExtractCodeBlock(text string) string {
	if m := codeBlockRe.FindStringSubmatch("```" + text); m != nil {
		return m[1]
	}
	if m := codeBlockRe.FindStringSubmatch(pythonFence.ReplaceAllString(text, "```")); m != nil {
		return m[1]
	}
	return ""
}

func buildMBPPInstruct(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	pool := make([]evalsuite.Doc, len(mbppFewShot))
	for i, e := range mbppFewShot {
		tests := make([]any, len(e.tests))
		for k, s := range e.tests {
			tests[k] = s
		}
		pool[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("list_fewshot_samples[%d]", i),
			Fields: map[string]any{"text": e.text, "code": e.code, "test_list": tests, "is_fewshot": true}}
	}
	shots := 3
	if src.NumFewShot >= 0 {
		shots = min(src.NumFewShot, len(pool))
	}
	const prefix = "\n```python\n"
	return &evalsuite.Task{
		Name: "mbpp_instruct", Version: "1.0", Output: evalsuite.GenerateUntil,
		Docs: docs, FewShot: pool, NumFewShot: shots,
		TargetDelimiter: "", FewshotDelimiter: "\n\n",
		DocToText: func(d evalsuite.Doc) (string, error) {
			text, err := d.Str("text")
			if err != nil {
				return "", err
			}
			tests, err := mbppTests(d)
			return "You are an expert Python programmer, and here is your task:\n" + text + "\nYour code should pass these tests:\n" + tests, err
		},
		DocToTarget: func(d evalsuite.Doc) (string, error) {
			if _, ok := d.Fields["is_fewshot"]; ok {
				c, err := d.Str("code")
				return c + "\n```", err
			}
			return mbppTests(d)
		},
		GenPrefix:     func(evalsuite.Doc) (string, error) { return prefix, nil },
		Gen:           evalsuite.GenKwargs{MaxGenToks: 256, Temperature: 0},
		ProcessFilter: "extract_code",
		Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
			tests, err := mbppTests(d)
			if err != nil {
				return nil, err
			}
			p, err := passAt1(ExtractCodeBlock(resp), tests)
			return evalsuite.Scores{"pass_at_1": {p}}, err
		},
		Metrics: []evalsuite.MetricSpec{{Name: "pass_at_1", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "mbpp_instruct", "output_type": "generate_until", "num_fewshot": shots, "unsafe_code": true,
			"doc_to_text":   "You are an expert Python programmer, and here is your task:\n{{text}}\nYour code should pass these tests:\n{{test_list[0]}}\n{{test_list[1]}}\n{{test_list[2]}}",
			"doc_to_target": "{% if is_fewshot is defined %}{{code}}\n```{% else %}{{test_list[0]}}\n{{test_list[1]}}\n{{test_list[2]}}{% endif %}",
			"gen_prefix":    prefix, "target_delimiter": "",
			"fewshot_config":    map[string]any{"sampler": "first_n", "samples": "utils.list_fewshot_samples"},
			"generation_kwargs": map[string]any{"max_gen_toks": 256, "until": []string{}, "do_sample": false},
			"filter_list":       []map[string]any{{"name": "extract_code", "filter": []map[string]any{{"function": "custom", "filter_fn": "utils.build_predictions (extract_code_blocks)"}}}},
			"metric_list":       []map[string]any{{"metric": "pass_at_1", "aggregation": "mean", "higher_is_better": true}},
			"sandbox":           "evalsuite/sandbox: code + \"\\n\" + tests, 3 s, rlimits, private dir, no network where the kernel allows",
		},
	}, nil
}

// humanEvalInstruct's prompt and gen_prefix, as the fork's task version
// 3.0 writes them (each ends with a space after the newline; upstream
// lm-eval 4.0 dropped those spaces).
const (
	humanEvalInstructText   = "Write a solution to the following problem and make sure that it passes the tests:\n```python\n%s\n```\n "
	humanEvalInstructPrefix = "Here is the completed function:\n```python\n%s\n "
)

func buildHumanEvalInstruct(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	until := []string{"\nclass", "\ndef", "\n#", "\nif", "\nprint"}
	prompt := func(d evalsuite.Doc) (string, error) { return d.Str("prompt") }
	return &evalsuite.Task{
		Name: "humaneval_instruct", Version: "3.0", Output: evalsuite.GenerateUntil, Docs: docs,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText: func(d evalsuite.Doc) (string, error) {
			p, err := prompt(d)
			return fmt.Sprintf(humanEvalInstructText, p), err
		},
		DocToTarget: humanEvalTests,
		GenPrefix: func(d evalsuite.Doc) (string, error) {
			p, err := prompt(d)
			return fmt.Sprintf(humanEvalInstructPrefix, p), err
		},
		Gen:           evalsuite.GenKwargs{Until: until, MaxGenToks: 1024, Temperature: 0},
		ProcessFilter: "create_test",
		Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
			p, err := prompt(d)
			if err != nil {
				return nil, err
			}
			tests, err := humanEvalTests(d)
			if err != nil {
				return nil, err
			}
			// build_predictions_instruct: the prompt, then the response
			// up to its first closing fence.
			if i := strings.Index(resp, "```"); i >= 0 {
				resp = resp[:i]
			}
			pass, err := passAt1(p+resp, tests)
			return evalsuite.Scores{"pass@1": {pass}}, err
		},
		Metrics: []evalsuite.MetricSpec{{Name: "pass@1", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "humaneval_instruct", "output_type": "generate_until", "num_fewshot": 0, "unsafe_code": true,
			"doc_to_text":       fmt.Sprintf(humanEvalInstructText, "{{ prompt }}"),
			"gen_prefix":        fmt.Sprintf(humanEvalInstructPrefix, "{{ prompt }}"),
			"doc_to_target":     "{{test}}\ncheck({{entry_point}})",
			"generation_kwargs": map[string]any{"until": until, "max_gen_toks": 1024, "do_sample": false},
			"filter_list":       []map[string]any{{"name": "create_test", "filter": []map[string]any{{"function": "custom", "filter_fn": "utils.build_predictions_instruct"}}}},
			"metric_list":       []map[string]any{{"metric": "pass@1", "aggregation": "mean", "higher_is_better": true, "k": []int{1}}},
			"sandbox":           "evalsuite/sandbox: prompt + completion + \"\\n\" + tests, 3 s, rlimits, private dir, no network where the kernel allows",
		},
	}, nil
}

// humanEvalTests is "{{test}}\ncheck({{entry_point}})".
func humanEvalTests(d evalsuite.Doc) (string, error) {
	test, err := d.Str("test")
	if err != nil {
		return "", err
	}
	entry, err := d.Str("entry_point")
	return test + "\ncheck(" + entry + ")", err
}
