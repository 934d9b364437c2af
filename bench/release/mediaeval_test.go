package release_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/media"
)

type hubAudio struct {
	Bytes []byte  `parquet:"bytes"`
	Path  *string `parquet:"path,optional"`
}

// libriRow and stsRow are the Hub copies' Parquet columns
// (lmms-lab/librispeech, mteb/sts12-sts).
type libriRow struct {
	Audio  hubAudio `parquet:"audio"`
	GT     string   `parquet:"gt"`
	Source string   `parquet:"source"`
	Task   string   `parquet:"task"`
}

type stsRow struct {
	Score     float64 `parquet:"score"`
	Sentence1 string  `parquet:"sentence1"`
	Sentence2 string  `parquet:"sentence2"`
}

func writeRows[T any](t *testing.T, rows []T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "test-00000-of-00001.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReleaseEvalsMediaUnits: `ttisctl release --workflow evals` on sim
// media units plans the catalog's reference for the model (no text smoke
// tasks), runs it over local files in the Hub copy's columns and grades
// it in the report. The sim's transcripts and vectors are not real
// recognition or meaning, so the scores are whatever they are: the test
// checks that the reference is measured and graded, labelled simulated,
// never that it passes.
func TestReleaseEvalsMediaUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisctl and ttisd serve")
	}
	_, ttisctl := build(t)
	var clips []libriRow
	for i, gt := range []string{"HE HOPED THERE WOULD BE STEW FOR DINNER", "STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", "AFTER EARLY NIGHTFALL THE YELLOW LAMPS WOULD LIGHT UP"} {
		s := make([]int16, 16000+4000*i)
		for j := range s {
			s[j] = int16((j*(i+5))%3000 - 1500)
		}
		p := "clip.wav"
		clips = append(clips, libriRow{Audio: hubAudio{Bytes: media.WAV(s, 16000, 1), Path: &p}, GT: gt, Source: "librispeech_test_other", Task: "asr_en"})
	}
	pairs := []stsRow{
		{5, "A man is playing a guitar.", "A man plays the guitar."},
		{0.4, "A cat sleeps.", "The stock market fell sharply."},
		{3.1, "Kids play football.", "Children are playing soccer."},
		{1.7, "A woman slices onions.", "A woman cuts a tomato."},
	}
	for _, tc := range []struct {
		model, task, file, key string
	}{
		{"whisper-large-v3", "librispeech_test_other", writeRows(t, clips), "wer,none"},
		{"bge-large-en-v1.5", "embedding", writeRows(t, pairs), "cosine_spearman,none"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			url := testbin.Serve(t, "model = \""+tc.model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
			state := t.TempDir()
			out, rc := ctl(t, ttisctl, "release", "--url", url, "--device", "n150", "--workflow", "evals",
				"--dataset", tc.task+"="+tc.file, "--offline", "--state-dir", state)
			if strings.Contains(out, "ttis_arith") {
				t.Errorf("a media unit's plan holds the text smoke tasks:\n%s", out)
			}
			store := &runs.Store{Root: filepath.Join(state, "runs")}
			list, errs := store.List("")
			if len(errs) > 0 || len(list) != 1 {
				t.Fatalf("exit %d, runs %v %v\n%s", rc, list, errs, out)
			}
			dir := store.Dir(list[0])
			js, err := os.ReadFile(filepath.Join(dir, release.ReportJSON))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := release.ParseJSON(js)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Evals == nil || len(rep.Evals.Rows) != 1 {
				t.Fatalf("eval rows %+v\n%s", rep.Evals, out)
			}
			row := rep.Evals.Rows[0]
			if row.Task != tc.task || row.Role != release.RoleReference || row.NotRun != "" || row.Score == nil || (row.Check != "PASS" && row.Check != "FAIL") {
				raw, _ := json.Marshal(row)
				t.Fatalf("reference row %s\n%s", raw, out)
			}
			if !list[0].Simulated {
				t.Errorf("run not labelled simulated: %+v", list[0])
			}
			md, _ := os.ReadFile(filepath.Join(dir, release.ReportMarkdown))
			if !strings.Contains(string(md), "SIMULATED") || !strings.Contains(string(md), tc.task) {
				t.Errorf("report.md:\n%s", md)
			}
			t.Logf("%s on sim %s: score %.2f (%s)", tc.task, tc.model, *row.Score, row.Check)
		})
	}
}
