package tasks

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

var essayTasks = []string{"niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "niah_multiquery"}

func buildEssay(t *testing.T, name string, lengths []int, n int) *evalsuite.Task {
	t.Helper()
	task, err := Build(name, Source{Dataset: "testdata/ruler_essay", NumFewShot: -1, CountTokens: wordCount, SeqLengths: lengths, Size: n})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestRulerEssayMatchesPython compares the five essay tasks' documents
// with testdata/ruler_essay_expected.py, which follows prepare_niah.py
// with Python NLTK's Punkt cutting the essays: keys, values, depths,
// haystack sizes (steps of 500 words, capped at the essays' length) and
// lengths, at 1024 and 4096.
func TestRulerEssayMatchesPython(t *testing.T) {
	for _, name := range essayTasks {
		checkRulerExpected(t, buildEssay(t, name, []int{1024, 4096}, 3), "testdata/ruler_essay_expected.jsonl")
	}
}

func TestRulerEssayRequestScoresAndOracle(t *testing.T) {
	for _, name := range essayTasks {
		task := buildEssay(t, name, []int{1024}, 2)
		reqs, err := task.Requests(task.Docs[0])
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name+".txt", reqs[0].Context)
		if g := reqs[0].Gen; g.MaxGenToks != 128 || len(g.Until) != 0 || g.Temperature != 0 {
			t.Errorf("%s: generation settings %+v", name, g)
		}
		outs, err := task.Docs[0].Strings("outputs")
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(outs, ", ")
		cases := []scoreCase{{" " + all + ".", 1}, {strings.ToUpper(all), 1}, {"I don't know.", 0}, {"", 0}}
		if len(outs) > 1 {
			// string_match_all: the share of the values found.
			cases = append(cases, scoreCase{outs[0], 1 / float64(len(outs))})
		}
		checkScores(t, task, task.Docs[0], "none", "1024", cases)
		right := func(d evalsuite.Doc) string {
			o, _ := d.Strings("outputs")
			return " " + strings.Join(o, ", ") + "."
		}
		wrong := func(evalsuite.Doc) string { return " 1234567." }
		checkOracle(t, task, openai.Completions, "1024,none", right, wrong)
	}
}

func TestRulerEssayNeedsItsInputs(t *testing.T) {
	_, err := Build("niah_single_2", Source{NumFewShot: -1, CountTokens: wordCount})
	if err == nil || !strings.Contains(err.Error(), "punkt_tab") {
		t.Errorf("no folder: %v", err)
	}
	_, err = Build("niah_single_2", Source{Dataset: "testdata/wonderwords", NumFewShot: -1, CountTokens: wordCount})
	if err == nil || !strings.Contains(err.Error(), "abbrev_types.txt") {
		t.Errorf("a folder without the Punkt parameters: %v", err)
	}
}

// TestRulerEssayReadsTheHubParquet builds niah_single_2 from the essays
// as a Parquet shard (the Hub split's layout: one "text" column) and
// expects the documents of the JSON Lines copy.
func TestRulerEssayReadsTheHubParquet(t *testing.T) {
	f, err := os.Open("testdata/ruler_essay/paul_graham_essays/train-00000-of-00001.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type essayRow struct {
		Text string `parquet:"text" json:"text"`
	}
	var rows []essayRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r essayRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	dir := t.TempDir()
	for _, sub := range []string{essayWordsDir, essayPunktDir} {
		abs, err := filepath.Abs(filepath.Join("testdata/ruler_essay", sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, essayEssaysDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(writeParquet(t, rows), filepath.Join(dir, essayEssaysDir, "0000.parquet")); err != nil {
		t.Fatal(err)
	}
	task, err := Build("niah_single_2", Source{Dataset: dir, NumFewShot: -1, CountTokens: wordCount, SeqLengths: []int{1024, 4096}, Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkRulerExpected(t, task, "testdata/ruler_essay_expected.jsonl")
}
