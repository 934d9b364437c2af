package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// scoreOne scores one response and returns the named metric under the
// named filter.
func scoreOne(t *testing.T, task *evalsuite.Task, d evalsuite.Doc, resp, filter, metric string) float64 {
	t.Helper()
	sc, err := task.Score(d, []evalsuite.Response{{Text: resp}})
	if err != nil {
		t.Fatalf("%q: %v", resp, err)
	}
	for _, s := range sc {
		if s.Filter == filter {
			return s.Scores[metric][0]
		}
	}
	t.Fatalf("no filter %s in %+v", filter, sc)
	return 0
}

type scoreCase struct {
	resp string
	want float64
}

func checkScores(t *testing.T, task *evalsuite.Task, d evalsuite.Doc, filter, metric string, cases []scoreCase) {
	t.Helper()
	for _, c := range cases {
		if got := scoreOne(t, task, d, c.resp, filter, metric); got != c.want {
			t.Errorf("%s %s,%s for %q = %v, want %v", task.Name, metric, filter, c.resp, got, c.want)
		}
	}
}

func TestLeaderboardMathHard(t *testing.T) {
	task, err := Build("leaderboard_math_hard", Source{Dataset: "testdata/math_lighteval_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 3 {
		t.Fatalf("%d documents: process_docs keeps the 3 Level 5 rows", len(task.Docs))
	}
	reqs, err := task.Requests(task.Docs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "leaderboard_math_hard.txt", reqs[0].Context)
	if task.SubtaskOf(task.Docs[1]) != "leaderboard_math_precalculus_hard" {
		t.Errorf("subtask %s", task.SubtaskOf(task.Docs[1]))
	}
	d := task.Docs[1] // gold \left( 3, \frac{\pi}{2} \right)
	checkScores(t, task, d, "none", "exact_match", []scoreCase{
		{"So $r=3$ and the answer is $\\boxed{(3,\\frac{\\pi}{2})}$.", 1},
		{"Final Answer: The final answer is $\\left(3, \\dfrac{\\pi}{2}\\right)$. I hope it is correct.", 1},
		{"$\\boxed{(3,\\pi)}$", 0},
		{"I cannot solve this.", 0},
		{"\\boxed{(3,", 0}, // malformed: the box never closes
	})
	checkScores(t, task, d, "none", "exact_match_original", []scoreCase{
		{"Final Answer: The final answer is $\\left( 3, \\frac{\\pi}{2} \\right)$. I hope it is correct.", 1},
		{"$\\boxed{(3,\\frac{\\pi}{2})}$", 0}, // the original metric reads only "Final Answer: ..."
		{"Final Answer: The final answer is $(3,\\pi)$. I hope it is correct.", 0},
	})
	right := func(d evalsuite.Doc) string {
		return "Final Answer: The final answer is $" + field(d, "answer") + "$. I hope it is correct."
	}
	wrong := func(evalsuite.Doc) string { return "Final Answer: The final answer is $17$. I hope it is correct." }
	checkOracle(t, task, openai.Completions, "exact_match,none", right, wrong)
	checkOracle(t, task, openai.Completions, "exact_match_original,none", right, wrong)
}

func TestMetaMath(t *testing.T) {
	task, err := Build("meta_math", Source{Dataset: "testdata/meta_math_details.jsonl", NumFewShot: -1,
		Files: map[string]string{"original": "testdata/math_lighteval_test.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "meta_math.txt", reqs[0].Context)
	if g, _ := task.Target(task.Docs[1]); g != `\frac{5}{6}` {
		t.Errorf("gold %v: the normalised boxed answer of the joined MATH solution", g)
	}
	checkScores(t, task, task.Docs[1], "none", "exact_match", []scoreCase{
		{"Therefore, the final answer is: $\\boxed{\\frac{5}{6}}$. I hope it is correct.", 1},
		{"$\\boxed{\\dfrac{5}{6}}$", 1},
		{"$\\boxed{0.83}$", 0},
		{"$\\boxed{\\frac{1}{6}}$", 0},
		{"The answer is 5/6", 0}, // no box: the cookbook scores 0
	})
	if _, err := Build("meta_math", Source{Dataset: "testdata/meta_math_details.jsonl", NumFewShot: -1}); err == nil || !strings.Contains(err.Error(), "solution") {
		t.Errorf("details without the MATH rows must say the solution is missing: %v", err)
	}
	right := func(d evalsuite.Doc) string { return "So $\\boxed{" + field(d, "answer") + "}$." }
	wrong := func(evalsuite.Doc) string { return "$\\boxed{-1}$" }
	checkOracle(t, task, openai.Completions, "exact_match,none", right, wrong)
}

func TestR1Math(t *testing.T) {
	for _, c := range []struct {
		task, file string
		doc        int
		cases      []scoreCase
	}{
		{"r1_math500", "testdata/math500_test.jsonl", 0, []scoreCase{
			{"<think>r = 3, theta = pi/2</think>\nThe polar coordinates are $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.", 1},
			{"\\boxed{(3, \\pi/2)}", 1},
			{"\\boxed{(3,\\frac{\\pi}{3})}", 0},
			{"", 0},
			{"\\boxed{", 0},
		}},
		{"r1_math500", "testdata/math500_test.jsonl", 1, []scoreCase{
			{"\\boxed{\\dfrac{14}{3}}", 1},
			{"The answer is 14/3.", 1},
			{"\\boxed{4.6667}", 1}, // numbers agree within the fork's rel_tol 1e-4
			{"\\boxed{4.6}", 0},
		}},
		{"r1_aime24", "testdata/aime24_train.jsonl", 0, []scoreCase{
			{"<think>9/s + t/60 = 4 ...</think> The walk takes \\boxed{204} minutes.", 1},
			{"so the answer is 204.", 1},
			{"\\boxed{240}", 0},
			{"I am not sure", 0},
		}},
		{"r1_aime24", "testdata/aime24_train.jsonl", 1, []scoreCase{{"\\boxed{25}", 1}, {"\\boxed{025}", 1}, {"\\boxed{52}", 0}}},
	} {
		task, err := Build(c.task, Source{Dataset: c.file, NumFewShot: -1})
		if err != nil {
			t.Fatal(err)
		}
		checkScores(t, task, task.Docs[c.doc], "none", "exact_match", c.cases)
	}
	for _, name := range []string{"r1_math500", "r1_aime24"} {
		file := map[string]string{"r1_math500": "testdata/math500_test.jsonl", "r1_aime24": "testdata/aime24_train.jsonl"}[name]
		task, err := Build(name, Source{Dataset: file, NumFewShot: -1})
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := task.Requests(task.Docs[0])
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name+".txt", reqs[0].Context)
		right := func(d evalsuite.Doc) string { return "<think>work</think>\\boxed{" + field(d, "answer") + "}" }
		wrong := func(evalsuite.Doc) string { return "\\boxed{999}" }
		checkOracle(t, task, openai.Completions, "exact_match,none", right, wrong)
	}
}

func TestAIME25(t *testing.T) {
	task, err := Build("aime25", Source{Dataset: "testdata/aime25_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "aime25.txt", reqs[0].Context)
	checkScores(t, task, task.Docs[0], "none", "exact_match", []scoreCase{
		{"The bases are 21 and 49, so the sum is $\\boxed{70}$.", 1},
		{"$70$", 1},
		{"70", 1},
		{"The answer is 70.", 0}, // no $ or box: the whole text is compared
		{"$\\boxed{49}$", 0},
	})
	right := func(d evalsuite.Doc) string { return "Thus $\\boxed{" + field(d, "answer") + "}$" }
	wrong := func(evalsuite.Doc) string { return "$\\boxed{1}$" }
	checkOracle(t, task, openai.Chat, "exact_match,none", right, wrong)
}

func TestGSM8KCoT(t *testing.T) {
	task, err := Build("gsm8k_cot", Source{Dataset: "testdata/gsm8k_main_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "gsm8k_cot.txt", reqs[0].Context)
	checkScores(t, task, task.Docs[0], "strict-match", "exact_match", []scoreCase{
		{" She sells 9 eggs for $2 each. The answer is 18.", 1},
		{" The answer is $18.", 0},
		{" 18", 0},
	})
	checkScores(t, task, task.Docs[0], "flexible-extract", "exact_match", []scoreCase{{" 9 * 2 = 18", 1}, {" 18 - 2 = 16", 0}, {" none", 0}})
	right := func(d evalsuite.Doc) string {
		a := field(d, "answer")
		return " Some steps. The answer is " + strings.TrimSpace(a[strings.LastIndex(a, "####")+4:]) + "."
	}
	wrong := func(evalsuite.Doc) string { return " The answer is 123456." }
	checkOracle(t, task, openai.Completions, "exact_match,strict-match", right, wrong)
}
