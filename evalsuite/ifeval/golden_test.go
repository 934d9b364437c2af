package ifeval

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

// debianProfiles is where Debian's python3-langdetect installs langdetect's
// profiles (.ci/run installs the package).
const debianProfiles = "/usr/lib/python3/dist-packages/langdetect/profiles"

// testChecker has NLTK's English Punkt parameters (testdata/punkt_tab) and,
// where the package is installed, langdetect's profiles.
func testChecker(t testing.TB) *Checker {
	t.Helper()
	p, err := punkt.Load("testdata/punkt_tab")
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{Punkt: punkt.New(p), PunktPath: "testdata/punkt_tab", LangsPath: debianProfiles}
	if _, err := os.Stat(debianProfiles); err == nil {
		if c.Langs, err = LoadProfiles(debianProfiles); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

type goldenItem struct {
	IDs      []string `json:"ids"`
	Kwargs   []Kwargs `json:"kwargs"`
	Response string   `json:"response"`
	Strict   []bool   `json:"strict"`
	Loose    []bool   `json:"loose"`
	Unseeded []string `json:"unseeded"`
}

func readGolden(t testing.TB, path string) []goldenItem {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Commit string       `json:"lm_eval_commit"`
		Seed   int64        `json:"langdetect_seed"`
		Items  []goldenItem `json:"items"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if g.Seed != 0 {
		t.Fatalf("%s was recorded with langdetect seed %d; the checker uses 0", path, g.Seed)
	}
	return g.Items
}

// TestMatchesLMEval scores the corpus testdata/lmeval_golden.py generated
// (every instruction of lm-eval's registry, followed, broken and on its
// edges, alone and combined) and compares every strict and loose verdict
// with what lm-eval's own instruction classes gave.
func TestMatchesLMEval(t *testing.T) {
	c := testChecker(t)
	items := readGolden(t, "testdata/lmeval_golden.json")
	if len(items) < 2000 {
		t.Fatalf("only %d items", len(items))
	}
	covered := map[string]bool{}
	failed, skipped := 0, 0
	for i, it := range items {
		needsLangs := false
		for _, id := range it.IDs {
			covered[id] = true
			needsLangs = needsLangs || registry[id].needs == needLangdetect
		}
		if needsLangs && c.Langs == nil {
			skipped++
			continue
		}
		res, err := c.Check(it.Response, it.IDs, it.Kwargs)
		if err != nil {
			t.Fatalf("item %d %v: %v", i, it.IDs, err)
		}
		if !reflect.DeepEqual(res.Strict, it.Strict) || !reflect.DeepEqual(res.Loose, it.Loose) {
			failed++
			if failed <= 20 {
				t.Errorf("item %d %v %v on %q:\n strict %v loose %v\n lm-eval strict %v loose %v", i, it.IDs, it.Kwargs, it.Response, res.Strict, res.Loose, it.Strict, it.Loose)
			}
		}
	}
	for _, id := range Supported() {
		if !covered[id] {
			t.Errorf("%s: no item in the corpus", id)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d items differ from lm-eval", failed, len(items))
	}
	unseeded := 0
	for _, it := range items {
		if len(it.Unseeded) > 0 {
			unseeded++
		}
	}
	t.Logf("%d items; on %d of them lm-eval's own unseeded runs disagreed (langdetect's nondeterminism)", len(items), unseeded)
	if skipped > 0 {
		t.Skipf("%d of %d items need langdetect's profiles, not installed at %s (apt-get install python3-langdetect); the others match lm-eval", skipped, len(items), debianProfiles)
	}
}

// TestLiveLMEval reruns testdata/lmeval_golden.py against lm-eval's code
// where it is set up (TTIS_LMEVAL_PYTHONPATH: lm-eval's ifeval files and
// NLTK >= 3.9.1, as the script's comment says; NLTK_DATA: the punkt_tab
// parameters) and checks that lm-eval still gives the committed verdicts
// and that this package agrees with the fresh ones (TTIS_PYTHON names the
// interpreter, /usr/bin/python3 by default).
func TestLiveLMEval(t *testing.T) {
	pp := os.Getenv("TTIS_LMEVAL_PYTHONPATH")
	if pp == "" || os.Getenv("NLTK_DATA") == "" {
		t.Skip("lm-eval's IFEval code is not set up here: set TTIS_LMEVAL_PYTHONPATH (lm-eval's lm_eval/tasks/ifeval files and NLTK >= 3.9.1) and NLTK_DATA (tokenizers/punkt_tab/english); see testdata/lmeval_golden.py")
	}
	if testing.Short() {
		t.Skip("runs lm-eval on the whole corpus (about half a minute)")
	}
	out := filepath.Join(t.TempDir(), "golden.json")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	// Debian's python3-langdetect and python3-immutabledict belong to the
	// system interpreter, which may not be the first python3 on PATH.
	py := os.Getenv("TTIS_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	cmd := exec.Command(py, "testdata/lmeval_golden.py")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pp)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	f.Close()
	if err != nil {
		t.Fatalf("lm-eval: %v\n%s", err, stderr.String())
	}
	fresh, committed := readGolden(t, out), readGolden(t, "testdata/lmeval_golden.json")
	if len(fresh) != len(committed) {
		t.Fatalf("lm-eval scored %d items, %d committed", len(fresh), len(committed))
	}
	c := testChecker(t)
	if c.Langs == nil {
		t.Skipf("langdetect's profiles are not at %s", debianProfiles)
	}
	for i := range fresh {
		if !reflect.DeepEqual(fresh[i].Strict, committed[i].Strict) || !reflect.DeepEqual(fresh[i].Loose, committed[i].Loose) {
			t.Errorf("item %d: lm-eval now gives %v %v, committed %v %v", i, fresh[i].Strict, fresh[i].Loose, committed[i].Strict, committed[i].Loose)
		}
		res, err := c.Check(fresh[i].Response, fresh[i].IDs, fresh[i].Kwargs)
		if err != nil || !reflect.DeepEqual(res.Strict, fresh[i].Strict) || !reflect.DeepEqual(res.Loose, fresh[i].Loose) {
			t.Errorf("item %d: %v %v %v, lm-eval %v %v", i, res.Strict, res.Loose, err, fresh[i].Strict, fresh[i].Loose)
		}
	}
}
