package workflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// TestRulerEssayPullsBesideTheLocalFolder runs niah_single_2 given only
// the user's wonderwords and punkt_tab folders: the essays come from the
// (fake) Hub although --dataset is set, the run records the split it
// read, and a model that finds the needle scores 1.
func TestRulerEssayPullsBesideTheLocalFolder(t *testing.T) {
	testdata := filepath.Join("..", "tasks", "testdata", "ruler_essay")
	raw, err := os.ReadFile(filepath.Join(testdata, "paul_graham_essays", "train-00000-of-00001.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type essayRow struct {
		Text string `parquet:"text" json:"text"`
	}
	var rows []essayRow
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r essayRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	var pq bytes.Buffer
	if err := parquet.Write(&pq, rows); err != nil {
		t.Fatal(err)
	}
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "baber/paul_graham_essays", "refs/convert/parquet", []hubtest.File{
		{Path: "default/train/0000.parquet", Content: pq.Bytes(), LFS: true},
	})
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: t.TempDir(), MaxAttempts: 2, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, sub := range []string{"wonderwords", "punkt_tab"} {
		abs, err := filepath.Abs(filepath.Join(testdata, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	srv := needleServer(t, &calls)
	oc, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", API: openai.Completions, Tasks: []string{"niah_single_2"},
		Datasets: map[string]string{"niah_single_2": dir}, Hub: hc,
		BuiltinSize: 2, SeqLengths: []int{1024}, Concurrency: 2, MaxRetries: 1, OutputDir: t.TempDir(), CacheDir: "-", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Run.Tasks) != 1 {
		t.Fatalf("not run: %v", oc.NotRun)
	}
	d := oc.Data["niah_single_2"]
	if d == nil || len(d.Splits) != 1 || d.Splits[0].Repo != "baber/paul_graham_essays" {
		t.Fatalf("recorded data %+v", d)
	}
	got := map[string]float64{}
	for _, a := range oc.Run.Tasks[0].Aggregates {
		got[a.Key()] = a.Value
	}
	if v, ok := got["1024,none"]; !ok || v != 1 || oc.Run.Tasks[0].NEffective != 2 {
		t.Errorf("a model that finds the needle scores %v over %d documents", got, oc.Run.Tasks[0].NEffective)
	}
}

// TestRulerEssayFolderWithoutTheHub runs niah_single_2 from a folder that
// holds the essays too while the Hub cannot supply them: the failed pull
// does not stop the run; a folder without the essays is not run, and the
// reason names the folder's missing part and the failed pull.
func TestRulerEssayFolderWithoutTheHub(t *testing.T) {
	fake := hubtest.New(t) // holds no baber/paul_graham_essays
	hc, err := hub.New(hub.Config{Endpoint: fake.URL, CacheDir: t.TempDir(), MaxAttempts: 1, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	full, err := filepath.Abs(filepath.Join("..", "tasks", "testdata", "ruler_essay"))
	if err != nil {
		t.Fatal(err)
	}
	partial := t.TempDir()
	for _, sub := range []string{"wonderwords", "punkt_tab"} {
		if err := os.Symlink(filepath.Join(full, sub), filepath.Join(partial, sub)); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	srv := needleServer(t, &calls)
	for _, tc := range []struct {
		dir string
		run bool
	}{{full, true}, {partial, false}} {
		oc, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", API: openai.Completions, Tasks: []string{"niah_single_2"},
			Datasets: map[string]string{"niah_single_2": tc.dir}, Hub: hc,
			BuiltinSize: 1, SeqLengths: []int{1024}, Concurrency: 1, MaxRetries: 1, OutputDir: t.TempDir(), CacheDir: "-", NumFewShot: -1})
		if err != nil {
			t.Fatal(err)
		}
		if ran := len(oc.Run.Tasks) == 1; ran != tc.run {
			t.Errorf("%s: ran %v, not run %v", tc.dir, ran, oc.NotRun)
		}
		if !tc.run {
			why := oc.NotRun["niah_single_2"]
			if !strings.Contains(why, "paul_graham_essays") || !strings.Contains(why, "pulling its Hub data failed") {
				t.Errorf("reason %q", why)
			}
		}
	}
}
