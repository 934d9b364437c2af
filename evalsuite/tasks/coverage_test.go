package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTaskHasCoverage keeps coverage.go complete: every runnable task
// says how far it reproduces its reference and how that was checked, and
// no entry names a task that does not exist.
func TestEveryTaskHasCoverage(t *testing.T) {
	for _, info := range List() {
		_, listed := coverage[info.Name]
		switch {
		case info.NotRunnable != "" && listed:
			t.Errorf("%s is not runnable but has a coverage entry", info.Name)
		case info.NotRunnable == "" && !listed:
			t.Errorf("%s has no coverage entry in coverage.go", info.Name)
		}
		c := info.Coverage
		switch c.Reproduces {
		case ReproducesFull, ReproducesPartial, ReproducesUnchecked, ReproducesOwn, ReproducesNone:
		default:
			t.Errorf("%s: reproduces %q", info.Name, c.Reproduces)
		}
		if c.Reproduces == ReproducesFull && c.Checked != CheckedReferenceCode {
			t.Errorf("%s claims a full reproduction checked by %q", info.Name, c.Checked)
		}
		if c.Reproduces == ReproducesPartial && c.Differs == "" {
			t.Errorf("%s: partial without what differs", info.Name)
		}
	}
	for name := range coverage {
		if _, ok := InfoOf(name); !ok {
			t.Errorf("coverage names unknown task %q", name)
		}
	}
	for _, name := range []string{"ifeval", "leaderboard_ifeval", "meta_ifeval"} {
		if info, _ := InfoOf(name); !info.Coverage.Certifiable() {
			t.Errorf("%s is not certifiable", name)
		}
	}
}

// ifevalAssetsDir lays out an assets folder: NLTK's English parameters from
// the ifeval tests and Debian's langdetect profiles.
func ifevalAssetsDir(t *testing.T) string {
	t.Helper()
	const profiles = "/usr/lib/python3/dist-packages/langdetect/profiles"
	if _, err := os.Stat(profiles); err != nil {
		t.Skipf("langdetect's profiles are not installed (%v): apt-get install python3-langdetect", err)
	}
	dir := t.TempDir()
	punkt, err := filepath.Abs("../ifeval/testdata/punkt_tab")
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"punkt_tab": punkt, "langdetect_profiles": profiles} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestIFEvalAssets runs prompts that need sentence counting and language
// detection: with the assets folder they are scored, without it they are
// errors that name the folder to give.
func TestIFEvalAssets(t *testing.T) {
	data := filepath.Join(t.TempDir(), "ifeval.jsonl")
	rows := `{"key": 1, "prompt": "Answer in German, in at least 2 sentences.", "instruction_id_list": ["language:response_language", "length_constraints:number_sentences"], "kwargs": [{"language": "de", "num_sentences": null, "relation": null}, {"language": null, "num_sentences": 2, "relation": "at least"}]}` + "\n"
	if err := os.WriteFile(data, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := ifevalAssetsDir(t)
	if !IsAssetsFolder("ifeval", dir) || IsAssetsFolder("ifeval", data) || IsAssetsFolder("niah_single_2", dir) {
		t.Fatal("IsAssetsFolder")
	}
	for _, name := range []string{"ifeval", "leaderboard_ifeval"} {
		task, err := Build(name, Source{Dataset: data, Assets: dir, NumFewShot: -1})
		if err != nil {
			t.Fatal(err)
		}
		checkScores(t, task, task.Docs[0], "none", "prompt_level_strict_acc", []scoreCase{
			{"Der schnelle braune Fuchs springt über den faulen Hund. Er schläft am Flussufer.", 1},
			{"Der schnelle braune Fuchs springt über den faulen Hund am Flussufer.", 0},
			{"The quick brown fox jumps over the lazy dog. It sleeps.", 0},
		})
		bare, err := Build(name, Source{Dataset: data, NumFewShot: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bare.Process(bare.Docs[0], "Der Fuchs. Der Hund.")
		if err == nil || !strings.Contains(err.Error(), "langdetect_profiles/") {
			t.Errorf("%s without assets: %v", name, err)
		}
	}
	if _, err := Build("ifeval", Source{Dataset: data, Assets: t.TempDir(), NumFewShot: -1}); err != nil {
		t.Errorf("an empty assets folder only disables the instructions that need it: %v", err)
	}
}
