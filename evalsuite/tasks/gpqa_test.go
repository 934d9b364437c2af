package tasks

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
)

var update = flag.Bool("update", false, "rewrite the golden prompt files under testdata/golden")

// checkGolden compares got with testdata/golden/name (rewritten by -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n got: %q\nwant: %q", name, got, want)
	}
}

// TestGPQAShuffleMatchesPython checks the shuffled choices and answer
// labels against testdata/gpqa_expected.py, which reproduces lm-eval's
// process_docs with CPython's random after random.seed(42).
func TestGPQAShuffleMatchesPython(t *testing.T) {
	task, err := Build("gpqa_diamond_cot_zeroshot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		choices []string
		answer  string
	}{
		{[]string{"97 Q", "451 Q", "412 Q", "388 Q"}, "(C)"},
		{[]string{"The lumen sac", "The swim bladder", "The gill plate", "The fin. root"}, "(A)"},
		{[]string{"Cupralite ", "Cobaltine", "Zincoid", "Ferrane"}, "(B)"}, // "[ref 2]" removed, its space kept,
		{[]string{"5", "9", "3", "7"}, "(D)"},
		{[]string{"3.5", "4.5", "2.5", "1.5"}, "(C)"},
	}
	if len(task.Docs) != len(want) {
		t.Fatalf("%d docs, want %d", len(task.Docs), len(want))
	}
	for i, w := range want {
		got, err := task.DocToChoices(task.Docs[i])
		if err != nil {
			t.Fatal(err)
		}
		target, err := task.DocToTarget(task.Docs[i])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w.choices) || target != w.answer {
			t.Errorf("doc %d: %q %s, want %q %s", i, got, target, w.choices, w.answer)
		}
	}
}

// TestGPQAShuffleDeterminism: the same seed gives the same permutations
// on every build and for every task family; another seed gives others.
func TestGPQAShuffleDeterminism(t *testing.T) {
	perms := func(name string, seed uint64) []string {
		task, err := Build(name, Source{Dataset: "testdata/gpqa.csv", NumFewShot: 0, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range task.Docs {
			c, err := d.Strings("choices")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join(c, "|"))
		}
		return out
	}
	a := perms("gpqa_diamond_cot_zeroshot", 0)
	for _, name := range []string{"gpqa_diamond_cot_zeroshot", "gpqa_main_zeroshot", "gpqa_extended_generative_n_shot"} {
		if b := perms(name, 0); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: permutations differ between builds:\n%q\n%q", name, a, b)
		}
	}
	if b := perms("gpqa_diamond_cot_zeroshot", 42); !reflect.DeepEqual(a, b) {
		t.Error("seed 42 must be the default")
	}
	if b := perms("gpqa_diamond_cot_zeroshot", 7); reflect.DeepEqual(a, b) {
		t.Error("seed 7 gave the same permutations as seed 42")
	}
}

func TestGPQAPromptsGolden(t *testing.T) {
	for _, tc := range []struct {
		task  string
		shots int
		chat  bool
	}{
		{"gpqa_diamond_cot_zeroshot", -1, false},
		{"gpqa_diamond_zeroshot", -1, false},
		{"gpqa_diamond_generative_n_shot", 2, true},
	} {
		t.Run(tc.task, func(t *testing.T) {
			task, err := Build(tc.task, Source{Dataset: "testdata/gpqa.csv", NumFewShot: tc.shots})
			if err != nil {
				t.Fatal(err)
			}
			// The second document has a multi-line question and cleaned answers.
			reqs, err := task.Requests(task.Docs[1])
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString(reqs[0].Context)
			for _, r := range reqs {
				if r.Kind == evalsuite.KindLoglikelihood {
					b.WriteString("\n--- continuation: " + r.Continuation)
				}
			}
			if tc.chat {
				for _, m := range reqs[0].Messages {
					b.WriteString("\n--- " + m.Role + ":\n" + m.Content)
				}
			}
			checkGolden(t, tc.task+".txt", b.String())
		})
	}
}

func TestGPQACoTScoring(t *testing.T) {
	task, err := Build("gpqa_diamond_cot_zeroshot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if task.Gen.Temperature != 0 || strings.Join(task.Gen.Until, "|") != "</s>" {
		t.Errorf("gen kwargs %+v", task.Gen)
	}
	if got := strings.Join(task.FilterNames(), ","); got != "strict-match,flexible-extract" {
		t.Fatalf("filters %s", got)
	}
	// Document 0's answer is (C) "412 Q".
	cases := []struct {
		resp             string
		strict, flexible float64
	}{
		{"The melting point follows... The answer is (C).", 1, 1},
		{"The answer is (c)!", 1, 0},                    // exact_match ignores case; the label regex does not
		{"Either (A) or (C); I choose (B)", 0, 0},       // flexible takes the last label
		{"The answer is (C)\nThe answer is (A).", 1, 0}, // strict takes the first, flexible the last
		{"I would say: C", 0, 1},                        // bare letter after a colon
		{"no idea", 0, 0},
	}
	perFilter := map[string][]evalsuite.Scores{}
	for _, c := range cases {
		sc, err := task.Score(task.Docs[0], []evalsuite.Response{{Text: c.resp}})
		if err != nil {
			t.Fatal(err)
		}
		if sc[0].Scores["exact_match"][0] != c.strict || sc[1].Scores["exact_match"][0] != c.flexible {
			t.Errorf("%q: strict %v (%q) flexible %v (%q), want %v %v", c.resp,
				sc[0].Scores["exact_match"], sc[0].Filtered, sc[1].Scores["exact_match"], sc[1].Filtered, c.strict, c.flexible)
		}
		for _, s := range sc {
			perFilter[s.Filter] = append(perFilter[s.Filter], s.Scores)
		}
	}
	aggs := evalsuite.AggregateScores(task.Metrics, task.FilterNames(), perFilter)
	keys := map[string]float64{}
	for _, a := range aggs {
		keys[a.Key()] = a.Value
	}
	// The catalog grades gpqa_diamond_cot_zeroshot on this key.
	if v, ok := keys["exact_match,flexible-extract"]; !ok || v != 2.0/6 {
		t.Errorf("aggregates %v", keys)
	}
	if keys["exact_match,strict-match"] != 3.0/6 {
		t.Errorf("aggregates %v", keys)
	}
}

func TestGPQAZeroShotScoring(t *testing.T) {
	task, err := Build("gpqa_diamond_zeroshot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Document 3's answer is (D).
	sc, err := task.Score(task.Docs[3], []evalsuite.Response{{LogLikelihood: -4}, {LogLikelihood: -3}, {LogLikelihood: -5}, {LogLikelihood: -1}})
	if err != nil || sc[0].Scores["acc"][0] != 1 || sc[0].Scores["acc_norm"][0] != 1 {
		t.Errorf("scored %+v %v", sc, err)
	}
	sc, err = task.Score(task.Docs[3], []evalsuite.Response{{LogLikelihood: -1}, {LogLikelihood: -3}, {LogLikelihood: -5}, {LogLikelihood: -4}})
	if err != nil || sc[0].Scores["acc"][0] != 0 {
		t.Errorf("scored %+v %v", sc, err)
	}
}

func TestGPQAGenerativeNShot(t *testing.T) {
	// The fixture has 5 documents: the default 5-shot from the evaluated
	// file itself cannot skip the asked document.
	if _, err := Build("gpqa_diamond_generative_n_shot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1}); err == nil || !strings.Contains(err.Error(), "5-shot") {
		t.Errorf("5-shot from 5 documents: %v", err)
	}
	// lm-eval draws shots+1 examples, so 4-shot fits a 5-document pool.
	task, err := Build("gpqa_diamond_generative_n_shot", Source{Dataset: "testdata/gpqa.csv", FewShotDataset: "testdata/gpqa.csv", NumFewShot: 4})
	if err != nil || task.Config["num_fewshot"] != 4 {
		t.Fatalf("4-shot from a few-shot file: %v", err)
	}
	task, err = Build("gpqa_diamond_generative_n_shot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The asked document is never its own example.
	ctx, _, err := task.Context(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(ctx, "zorbium") != 1 || strings.Count(ctx, "Question: ") != 4 {
		t.Errorf("context repeats the asked question or has the wrong shot count:\n%s", ctx)
	}
	sc, err := task.Score(task.Docs[0], []evalsuite.Response{{Text: " (C) 412 Q\n"}})
	if err != nil || sc[1].Filter != "flexible-extract" || sc[1].Scores["exact_match"][0] != 1 || sc[0].Scores["exact_match"][0] != 0 {
		t.Errorf("scored %+v %v", sc, err)
	}
}

func TestGPQAErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2\nq,a,b,c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build("gpqa_diamond_cot_zeroshot", Source{Dataset: bad, NumFewShot: -1})
	if err == nil || !strings.Contains(err.Error(), `bad.csv:2: missing field "Incorrect Answer 3"`) {
		t.Errorf("missing column: %v", err)
	}
	if _, err := Build("gpqa_diamond_cot_zeroshot", Source{NumFewShot: -1}); err == nil || !strings.Contains(err.Error(), "Idavidrein/gpqa") {
		t.Errorf("no dataset: %v", err)
	}
}

// TestGPQAFlexibleExtractReadsChoiceText: a CoT answer that names its
// choice by text, not letter, still scores under flexible-extract (the
// task hands the document's choices to multi_choice_regex).
func TestGPQAFlexibleExtractReadsChoiceText(t *testing.T) {
	task, err := Build("gpqa_diamond_cot_zeroshot", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	doc := task.Docs[0] // choices 97 Q, 451 Q, 412 Q, 388 Q; answer (C)
	for _, c := range []struct {
		text string
		want float64
	}{
		{"Working it through, the charge comes to 412 Q.", 1},
		{"Working it through, the charge comes to 451 Q.", 0},
		{"So the answer is (C).", 1},
	} {
		scored, err := task.Score(doc, []evalsuite.Response{{Text: c.text}})
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, s := range scored {
			if s.Filter == "flexible-extract" {
				got = s.Scores["exact_match"][0]
			}
		}
		if got != c.want {
			t.Errorf("%q: flexible-extract exact_match = %v, want %v (%+v)", c.text, got, c.want, scored)
		}
	}
}
