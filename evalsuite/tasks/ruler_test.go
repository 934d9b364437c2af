package tasks

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// wordCount is the stand-in tokenizer of testdata/ruler_expected.py:
// whitespace-separated words plus a BOS token.
func wordCount(text string) (int, error) { return len(strings.Fields(text)) + 1, nil }

func buildMultikey3(t *testing.T, lengths []int, n int) *evalsuite.Task {
	t.Helper()
	task, err := Build("niah_multikey_3", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: lengths, Size: n})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestRulerNIAHMatchesPython compares the generated documents with
// testdata/ruler_expected.py, which follows lm-eval's prepare_niah.py
// with CPython's random after random.seed(42): the same keys, values,
// needle positions, haystack sizes and lengths, at a length below 4096
// (haystack steps of 5 lines) and at 4096 (steps of 25).
func TestRulerNIAHMatchesPython(t *testing.T) {
	checkRulerExpected(t, buildMultikey3(t, []int{400, 4096}, 3), "testdata/ruler_niah_multikey_3_expected.jsonl")
}

// TestRulerVTMatchesPython does the same for ruler_vt against
// testdata/ruler_vt_expected.py (vt_utils.py after random.seed(42) and
// np.random.seed(42)): a worked example at 500 tokens, then the samples,
// per length.
func TestRulerVTMatchesPython(t *testing.T) {
	task, err := Build("ruler_vt", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{1024, 4096}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_vt_expected.jsonl")
}

func checkRulerExpected(t *testing.T, task *evalsuite.Task, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	i := 0
	for ; sc.Scan(); i++ {
		var want struct {
			Task        string   `json:"task"`
			Index       int      `json:"index"`
			MaxLength   int      `json:"max_length"`
			Length      int      `json:"length"`
			Outputs     []string `json:"outputs"`
			GenPrefix   string   `json:"gen_prefix"`
			InputSHA256 string   `json:"input_sha256"`
		}
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		if want.Task != "" && want.Task != task.Name {
			i--
			continue
		}
		if i >= len(task.Docs) {
			t.Fatalf("%d documents, the expectation has more", len(task.Docs))
		}
		d := task.Docs[i]
		sum := sha256.Sum256([]byte(field(d, "input")))
		outs, _ := d.Strings("outputs")
		if hex.EncodeToString(sum[:]) != want.InputSHA256 || strings.Join(outs, "|") != strings.Join(want.Outputs, "|") ||
			field(d, "gen_prefix") != want.GenPrefix || field(d, "length") != itoa(want.Length) ||
			field(d, "max_length") != itoa(want.MaxLength) || field(d, "index") != itoa(want.Index) {
			t.Errorf("%s document %d differs from Python's: outputs %v prefix %q length %s, want %+v",
				task.Name, i, outs, field(d, "gen_prefix"), field(d, "length"), want)
		}
	}
	if i != len(task.Docs) {
		t.Errorf("%d documents, want %d", len(task.Docs), i)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRulerNIAHRequestAndScores(t *testing.T) {
	task := buildMultikey3(t, []int{400}, 2)
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "niah_multikey_3.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 128 || len(g.Until) != 0 || g.Temperature != 0 {
		t.Errorf("generation settings %+v", g)
	}
	gold := firstOutput(task.Docs[0])
	// Scored under the document's length ("400" here), "4096" is -1.
	checkScores(t, task, task.Docs[0], "none", "400", []scoreCase{
		{" " + gold + ".", 1},
		{strings.ToUpper(gold), 1},      // case-insensitive
		{"\x00" + gold + "\n\nmore", 1}, // control characters become newlines
		{gold[:20], 0},                  // a partial uuid is no match
		{"I don't know.", 0},
		{"", 0},
	})
	if got := scoreOne(t, task, task.Docs[0], gold, "none", "4096"); got != -1 {
		t.Errorf("a 400-token document's 4096 score = %v, want lm-eval's -1 placeholder", got)
	}
}

func firstOutput(d evalsuite.Doc) string {
	o, err := d.Strings("outputs")
	if err != nil {
		panic(err)
	}
	return o[0]
}

func TestRulerNIAHOracle(t *testing.T) {
	task := buildMultikey3(t, []int{4096}, 4)
	right := func(d evalsuite.Doc) string { return " " + firstOutput(d) + "." }
	wrong := func(d evalsuite.Doc) string { return " 00000000-0000-4000-8000-000000000000." }
	checkOracle(t, task, openai.Completions, "4096,none", right, wrong)
	checkOracle(t, task, openai.Chat, "4096,none", right, wrong)

	// Two lengths: each is the mean over its own documents; a length with
	// no documents is absent, and "4096" is -1 when no 4096 document ran.
	mixed := buildMultikey3(t, []int{400, 8192}, 2)
	half := func(d evalsuite.Doc) string {
		if field(d, "index") == "0" {
			return firstOutput(d)
		}
		return "no"
	}
	got := runOracle(t, mixed, openai.Completions, half)
	if got["400,none"] != 0.5 || got["8192,none"] != 0.5 || got["4096,none"] != -1 {
		t.Errorf("per-length scores %v, want 400 and 8192 at 0.5 and 4096 at -1", got)
	}
}

func TestRulerNIAHNeedsTheServersTokenizer(t *testing.T) {
	_, err := Build("niah_multikey_3", Source{NumFewShot: -1})
	if err == nil || !strings.Contains(err.Error(), "/tokenize") {
		t.Errorf("no tokenizer: %v", err)
	}
	fail := errors.New("tokenizer down")
	_, err = Build("niah_multikey_3", Source{NumFewShot: -1, CountTokens: func(string) (int, error) { return 0, fail }})
	if !errors.Is(err, fail) {
		t.Errorf("tokenizer error: %v", err)
	}
	_, err = Build("niah_multikey_3", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{100}})
	if err == nil || !strings.Contains(err.Error(), "100") {
		t.Errorf("too short a length: %v", err)
	}
	// A length too short for even the smallest haystack is an error, not
	// Python's endless retry.
	_, err = Build("niah_multikey_3", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{200}, Size: 1})
	if err == nil {
		t.Error("a 200-token length with a 60-word template built")
	}
}

func TestRulerAggregate(t *testing.T) {
	if v := rulerAggregate([][]float64{{-1}, {1}, {0}}); v != 0.5 {
		t.Errorf("aggregate %v", v)
	}
	if v := rulerAggregate([][]float64{{-1}, {-1}}); v != -1 {
		t.Errorf("all placeholders: %v", v)
	}
	if v := rulerStringMatchAll("the BETA one", []string{"beta", "gamma"}); math.Abs(v-0.5) > 1e-12 {
		t.Errorf("string_match_all %v", v)
	}
}

func TestRulerVTRequestScoresAndOracle(t *testing.T) {
	task, err := Build("ruler_vt", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{1024}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "ruler_vt.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 30 || len(g.Until) != 0 || g.Temperature != 0 {
		t.Errorf("generation settings %+v", g)
	}
	outs, _ := task.Docs[0].Strings("outputs")
	checkScores(t, task, task.Docs[0], "none", "1024", []scoreCase{
		{" " + strings.Join(outs, " "), 1},
		{" " + strings.ToLower(strings.Join(outs, ", ")) + ".", 1},
		{" " + strings.Join(outs[:3], " "), 0.6}, // three of the five variables
		{" VAR ABCDE", 0},
		{"", 0},
	})
	right := func(d evalsuite.Doc) string { o, _ := d.Strings("outputs"); return " " + strings.Join(o, " ") }
	wrong := func(evalsuite.Doc) string { return " none of them" }
	checkOracle(t, task, openai.Completions, "1024,none", right, wrong)
	checkOracle(t, task, openai.Chat, "1024,none", right, wrong)
}

func buildHotpot(t *testing.T, lengths []int, n int) *evalsuite.Task {
	t.Helper()
	task, err := Build("ruler_qa_hotpot", Source{Dataset: "testdata/hotpot_dev_distractor_v1.json", NumFewShot: -1, CountTokens: wordCount, SeqLengths: lengths, Size: n})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestRulerQAHotpotMatchesPython checks ruler_qa_hotpot against
// testdata/ruler_qa_expected.py (qa_utils.py after random.seed(42)) on a
// HotpotQA-layout file: twenty of the 39 distinct paragraphs at 900
// tokens (the question's ten and ten drawn), all of them at 2048.
func TestRulerQAHotpotMatchesPython(t *testing.T) {
	checkRulerExpected(t, buildHotpot(t, []int{900, 2048}, 4), "testdata/ruler_qa_hotpot_expected.jsonl")
}

func TestRulerQAHotpotRequestScoresAndOracle(t *testing.T) {
	task := buildHotpot(t, []int{900}, 4)
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "ruler_qa_hotpot.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 32 || len(g.Until) != 0 {
		t.Errorf("generation settings %+v", g)
	}
	checkScores(t, task, task.Docs[0], "none", "900", []scoreCase{
		{" Arthur's Magazine", 1},
		{" arthur's magazine was first.", 1},
		{" First for Women", 0},
		{"", 0},
	})
	right := func(d evalsuite.Doc) string { return " " + firstOutput(d) }
	wrong := func(evalsuite.Doc) string { return " Paris" }
	checkOracle(t, task, openai.Completions, "900,none", right, wrong)
	checkOracle(t, task, openai.Chat, "900,none", right, wrong)

	if _, err := Build("ruler_qa_hotpot", Source{NumFewShot: -1, CountTokens: wordCount}); err == nil || !strings.Contains(err.Error(), "namlh2004/hotpotqa") {
		t.Errorf("no data: %v", err)
	}
	if _, err := Build("ruler_qa_hotpot", Source{Dataset: "testdata/gsm8k_test.jsonl", NumFewShot: -1, CountTokens: wordCount}); err == nil {
		t.Error("a file in another layout built")
	}
}

func TestPyStrRepr(t *testing.T) {
	for in, want := range map[string]string{
		"yes": `'yes'`, "Arthur's Magazine": `"Arthur's Magazine"`, `say "hi" it's`: `'say "hi" it\'s'`,
		"a\\b\n": `'a\\b\n'`, "caf\u00e9\u00a0x": "'caf\u00e9\\xa0x'", "\u200b": `'\u200b'`,
	} {
		if got := pyStrRepr(in); got != want {
			t.Errorf("repr(%q) = %s, want %s", in, got, want)
		}
	}
	if got := pyStrListRepr([]string{"a", "b'c"}); got != `['a', "b'c"]` {
		t.Errorf("list repr %s", got)
	}
}

// TestRulerQASquadMatchesPython checks ruler_qa_squad, read from rows in
// the Hub copy's layout, against testdata/ruler_squad_expected.py, which
// runs qa_utils' read_squad on the same questions in SQuAD 2.0's nested
// JSON: the articles and paragraphs rebuilt from the rows give the same
// documents, distractor draws and retries.
func TestRulerQASquadMatchesPython(t *testing.T) {
	task, err := Build("ruler_qa_squad", Source{Dataset: "testdata/squad_v2_validation.jsonl", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{420, 1024}, Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_qa_squad_expected.jsonl")

	task, err = Build("ruler_qa_squad", Source{Dataset: "testdata/squad_v2_validation.jsonl", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{420}, Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "ruler_qa_squad.txt", reqs[0].Context)
	// Two gold answers: finding one scores one half (lm-eval's
	// string_match_part over one prediction).
	checkScores(t, task, task.Docs[0], "none", "420", []scoreCase{
		{" Normans part 0", 1},
		{" part 0", 0.5},
		{" Normans", 0},
	})
	right := func(d evalsuite.Doc) string { o, _ := d.Strings("outputs"); return strings.Join(o, "; ") }
	wrong := func(evalsuite.Doc) string { return " Paris" }
	checkOracle(t, task, openai.Completions, "420,none", right, wrong)
}

// squadRow is rajpurkar/squad_v2's Parquet schema.
type squadRow struct {
	ID       string `parquet:"id"`
	Title    string `parquet:"title"`
	Context  string `parquet:"context"`
	Question string `parquet:"question"`
	Answers  struct {
		Text        []string `parquet:"text,list"`
		AnswerStart []int32  `parquet:"answer_start,list"`
	} `parquet:"answers"`
}

// TestRulerQASquadReadsTheHubParquet builds the same documents from the
// Hub copy's Parquet layout as from its JSON Lines form.
func TestRulerQASquadReadsTheHubParquet(t *testing.T) {
	f, err := os.Open("testdata/squad_v2_validation.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []squadRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			ID, Title, Context, Question string
			Answers                      struct {
				Text        []string `json:"text"`
				AnswerStart []int32  `json:"answer_start"`
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		row := squadRow{ID: r.ID, Title: r.Title, Context: r.Context, Question: r.Question}
		row.Answers.Text, row.Answers.AnswerStart = r.Answers.Text, r.Answers.AnswerStart
		rows = append(rows, row)
	}
	src := Source{Dataset: writeParquet(t, rows), NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{420, 1024}, Size: 4}
	task, err := Build("ruler_qa_squad", src)
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_qa_squad_expected.jsonl")
}

// TestRulerFWEMatchesPython checks ruler_fwe against
// testdata/ruler_fwe_expected.py (fwe_utils.py after random.seed(42)).
func TestRulerFWEMatchesPython(t *testing.T) {
	task, err := Build("ruler_fwe", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{1024, 4096}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_fwe_expected.jsonl")
}

func TestRulerFWERequestScoresAndOracle(t *testing.T) {
	task, err := Build("ruler_fwe", Source{NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{1024}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "ruler_fwe.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 50 || len(g.Until) != 0 {
		t.Errorf("generation settings %+v", g)
	}
	outs, _ := task.Docs[0].Strings("outputs")
	checkScores(t, task, task.Docs[0], "none", "1024", []scoreCase{
		{" " + strings.Join(outs, ", "), 1},
		{" " + outs[0] + " and " + outs[2], 2.0 / 3},
		{" ....", 0},
	})
	right := func(d evalsuite.Doc) string { o, _ := d.Strings("outputs"); return " " + strings.Join(o, " ") }
	wrong := func(evalsuite.Doc) string { return " ...." }
	checkOracle(t, task, openai.Completions, "1024,none", right, wrong)
}

// TestRulerWordKeysMatchPython checks niah_single_1 (repeated filler) and
// niah_multikey_2 (distractor needles), whose keys are wonderwords
// adjective-noun pairs, against testdata/ruler_words_expected.py, which
// follows prepare_niah.py on the small lists of testdata/wonderwords.
func TestRulerWordKeysMatchPython(t *testing.T) {
	for _, name := range []string{"niah_single_1", "niah_multikey_2"} {
		task, err := Build(name, Source{Dataset: "testdata/wonderwords", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{600, 4096}, Size: 3})
		if err != nil {
			t.Fatal(err)
		}
		checkRulerExpected(t, task, "testdata/ruler_words_expected.jsonl")
	}
	task, err := Build("niah_single_1", Source{Dataset: "testdata/wonderwords", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{600}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "niah_single_1.txt", reqs[0].Context)
	checkScores(t, task, task.Docs[0], "none", "600", []scoreCase{{" 8536477.", 1}, {" 8536476.", 0}, {"", 0}})
	right := func(d evalsuite.Doc) string { return " " + firstOutput(d) + "." }
	wrong := func(evalsuite.Doc) string { return " 1234567." }
	checkOracle(t, task, openai.Completions, "600,none", right, wrong)

	_, err = Build("niah_single_1", Source{NumFewShot: -1, CountTokens: wordCount})
	if err == nil || !strings.Contains(err.Error(), "wonderwords/assets") {
		t.Errorf("no word lists: %v", err)
	}
	_, err = Build("niah_single_1", Source{Dataset: "testdata", NumFewShot: -1, CountTokens: wordCount})
	if err == nil || !strings.Contains(err.Error(), "adjectivelist.txt") {
		t.Errorf("a folder without the lists: %v", err)
	}
}

func TestWonderwordsPairsSortLikePython(t *testing.T) {
	w, err := loadWonderwordsPairs("testdata/wonderwords")
	if err != nil {
		t.Fatal(err)
	}
	// 8 distinct adjectives times 10 nouns, less "well-off-road" spelt twice.
	if w.len() != 79 {
		t.Fatalf("%d pairs", w.len())
	}
	for i := 1; i < w.len(); i++ {
		if !(w.at(i-1) < w.at(i)) {
			t.Fatalf("pairs %d and %d out of order: %q, %q", i-1, i, w.at(i-1), w.at(i))
		}
	}
	if w.at(0) != "able-ant" || w.at(w.len()-1) != "zany-zebra" {
		t.Errorf("first %q, last %q", w.at(0), w.at(w.len()-1))
	}
}

// TestRulerCWEMatchesPython checks ruler_cwe against
// testdata/ruler_cwe_expected.py (cwe_utils.py after random.seed(42), its
// module RNG random.Random(42)) on the small lists of testdata/wonderwords,
// below 4096 tokens (6 and 1 repeats) and at 4096 (30 and 3).
func TestRulerCWEMatchesPython(t *testing.T) {
	task, err := Build("ruler_cwe", Source{Dataset: "testdata/wonderwords", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{600, 4096}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_cwe_expected.jsonl")

	task, err = Build("ruler_cwe", Source{Dataset: "testdata/wonderwords", NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{600}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "ruler_cwe.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 120 || len(g.Until) != 0 {
		t.Errorf("generation settings %+v", g)
	}
	outs, _ := task.Docs[0].Strings("outputs")
	checkScores(t, task, task.Docs[0], "none", "600", []scoreCase{
		{" " + numbered(outs), 1},
		{" " + strings.Join(outs[:5], ", "), 0.5},
		{"", 0},
	})
	right := func(d evalsuite.Doc) string { o, _ := d.Strings("outputs"); return " " + numbered(o) }
	wrong := func(evalsuite.Doc) string { return " none" }
	checkOracle(t, task, openai.Completions, "600,none", right, wrong)
	if _, err := Build("ruler_cwe", Source{NumFewShot: -1, CountTokens: wordCount}); err == nil || !strings.Contains(err.Error(), "wonderwords/assets") {
		t.Errorf("no word lists: %v", err)
	}
}
