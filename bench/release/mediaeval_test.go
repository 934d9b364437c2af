package release_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
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

func parquetRows[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// flacClip is a mono 16 kHz FLAC file (LibriSpeech's encoding) of n
// samples, written with the FLAC library's encoder.
func flacClip(t *testing.T, n, seed int) []byte {
	t.Helper()
	samples := make([]int32, n)
	for j := range samples {
		samples[j] = int32((j*(seed+5))%3000 - 1500)
	}
	var buf bytes.Buffer
	enc, err := flac.NewEncoder(&buf, &meta.StreamInfo{BlockSizeMin: 16, BlockSizeMax: 4096, SampleRate: 16000, NChannels: 1, BitsPerSample: 16, NSamples: uint64(n)})
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < n; off += 4096 {
		k := min(4096, n-off)
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(k), SampleRate: 16000, Channels: frame.ChannelsMono, BitsPerSample: 16},
			Subframes: []*frame.Subframe{{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: samples[off : off+k], NSamples: k}}}
		if err := enc.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReleaseEvalsMediaUnits: `ttisctl release --workflow evals` on sim
// media units plans the catalog's reference for the model (no text smoke
// tasks), pulls its dataset from a fake Hub in the real repositories'
// layout (LibriSpeech's clips as FLAC, as lmms-lab/librispeech keeps
// them), runs it and grades it in the report. The sim's transcripts and
// vectors are not real recognition or meaning, so the scores are whatever
// they are: the test checks that the reference is measured and graded,
// labelled simulated, never that it passes.
func TestReleaseEvalsMediaUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisctl and ttisd serve")
	}
	_, ttisctl := build(t)
	var clips []libriRow
	for i, gt := range []string{"HE HOPED THERE WOULD BE STEW FOR DINNER", "STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", "AFTER EARLY NIGHTFALL THE YELLOW LAMPS WOULD LIGHT UP"} {
		p := "clip.flac"
		clips = append(clips, libriRow{Audio: hubAudio{Bytes: flacClip(t, 16000+4000*i, i), Path: &p}, GT: gt, Source: "librispeech_test_other", Task: "asr_en"})
	}
	pairs := []stsRow{
		{5, "A man is playing a guitar.", "A man plays the guitar."},
		{0.4, "A cat sleeps.", "The stock market fell sharply."},
		{3.1, "Kids play football.", "Children are playing soccer."},
		{1.7, "A woman slices onions.", "A woman cuts a tomato."},
	}
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "lmms-lab/librispeech", "main", []hubtest.File{
		{Path: "data/librispeech_test_other-00000-of-00001.parquet", Content: parquetRows(t, clips), LFS: true},
		{Path: "librispeech_test_other/librispeech_test_other-00000-of-00015.parquet", Content: []byte("another configuration, not read"), LFS: true},
	})
	fake.SetBranch("dataset", "mteb/sts12-sts", "refs/convert/parquet", []hubtest.File{
		{Path: "default/test/0000.parquet", Content: parquetRows(t, pairs), LFS: true},
	})
	for _, tc := range []struct {
		model, task string
	}{
		{"whisper-large-v3", "librispeech_test_other"},
		{"bge-large-en-v1.5", "embedding"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			url := testbin.Serve(t, "model = \""+tc.model+"\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
			state := t.TempDir()
			out, rc := ctl(t, ttisctl, "release", "--url", url, "--device", "n150", "--workflow", "evals",
				"--hf-endpoint", fake.URL, "--offline=false", "--hub-cache", filepath.Join(state, "hub"), "--state-dir", state)
			if strings.Contains(out, "ttis_arith") {
				t.Errorf("a media unit's plan holds the text smoke tasks:\n%s", out)
			}
			store := &runs.Store{Root: filepath.Join(state, "runs")}
			list, errs := store.List(context.Background(), "")
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
			// LibriSpeech's reference is graded (100 − WER against the
			// published score); STS12's catalog number is no STS12 score
			// (score_fn custom), so its score is reported, not graded, as
			// tt-inference-server reports it NA.
			want := map[string]string{"librispeech_test_other": "graded", "embedding": "NA"}[tc.task]
			graded := row.Check == "PASS" || row.Check == "FAIL"
			if row.Task != tc.task || row.Role != release.RoleReference || row.NotRun != "" || row.Score == nil || (want == "graded") != graded {
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
			// The smoke limit keeps a few documents of each set.
			if row.Samples < 3 || row.Errored != 0 {
				t.Errorf("%d samples, %d errored", row.Samples, row.Errored)
			}
			t.Logf("%s on sim %s: score %.2f (%s)", tc.task, tc.model, *row.Score, row.Check)
		})
	}
}

type libriTTSRow struct {
	TextOriginal string `parquet:"text_original"`
	ID           string `parquet:"id"`
}

// TestReleaseEvalsTTSUnit: tts_generation needs a second unit to hear the
// speech. Without --asr-url the reference is listed as not measured with
// that reason (and its data is not pulled); with a sim whisper unit as the
// ASR server it is measured and graded against the WER bar. Sim speech is
// a tone and sim transcripts are not recognition: the score is whatever
// it is.
func TestReleaseEvalsTTSUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ttisctl and ttisd serve")
	}
	_, ttisctl := build(t)
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "blabble-io/libritts_r", "refs/convert/parquet", []hubtest.File{
		{Path: "clean/test.clean/0000.parquet", Content: parquetRows(t, []libriTTSRow{{"The birch canoe slid on the smooth planks.", "1"}, {"Glue the sheet to the dark blue background.", "2"}, {"It's easy to tell the depth of a well.", "3"}}), LFS: true},
	})
	tts := testbin.Serve(t, "model = \"speecht5_tts\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	asr := testbin.Serve(t, "model = \"whisper-large-v3\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	hubArgs := func(state string) []string {
		return []string{"--hf-endpoint", fake.URL, "--offline=false", "--hub-cache", filepath.Join(state, "hub"), "--state-dir", state}
	}
	row := func(state string) release.EvalRow {
		t.Helper()
		store := &runs.Store{Root: filepath.Join(state, "runs")}
		list, errs := store.List(context.Background(), "")
		if len(errs) > 0 || len(list) != 1 || !list[0].Simulated {
			t.Fatalf("runs %+v %v", list, errs)
		}
		js, err := os.ReadFile(filepath.Join(store.Dir(list[0]), release.ReportJSON))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := release.ParseJSON(js)
		if err != nil || rep.Evals == nil || len(rep.Evals.Rows) != 1 || rep.Evals.Rows[0].Task != "tts_generation" {
			t.Fatalf("report %+v %v", rep.Evals, err)
		}
		return rep.Evals.Rows[0]
	}

	state := t.TempDir()
	out, _ := ctl(t, ttisctl, append([]string{"release", "--url", tts, "--device", "n150", "--workflow", "evals"}, hubArgs(state)...)...)
	if r := row(state); !strings.Contains(r.NotRun, "--asr-url") {
		t.Errorf("without an ASR server: %+v\n%s", r, out)
	}
	if strings.Contains(out, "libritts_r") {
		t.Errorf("the data of a task that cannot run was pulled:\n%s", out)
	}

	state = t.TempDir()
	out, _ = ctl(t, ttisctl, append([]string{"release", "--url", tts, "--device", "n150", "--workflow", "evals", "--asr-url", asr, "--asr-model", "whisper-large-v3"}, hubArgs(state)...)...)
	r := row(state)
	if r.NotRun != "" || r.Score == nil || r.Samples != 3 || r.Errored != 0 || (r.Check != "PASS" && r.Check != "FAIL") || !strings.Contains(r.Basis, "20%") {
		raw, _ := json.Marshal(r)
		t.Fatalf("with a sim whisper as the ASR server: %s\n%s", raw, out)
	}
	t.Logf("tts_generation on sim speecht5_tts heard by sim whisper-large-v3: intelligibility %.2f (%s)", *r.Score, r.Check)
}
