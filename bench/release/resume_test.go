package release_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/limit"
)

// cancelAfter is a progress display that cancels the run once n requests
// (benchmark requests or eval documents) of step have finished.
type cancelAfter struct {
	step   string
	n      int64
	cancel context.CancelFunc
	cur    atomic.Value
	done   atomic.Int64
}

func (c *cancelAfter) Logf(string, ...any) {}
func (c *cancelAfter) Step(name string, _ int) {
	c.cur.Store(name)
}
func (c *cancelAfter) Done(n int) {
	if name, _ := c.cur.Load().(string); strings.HasPrefix(name, c.step) && c.done.Add(int64(n)) >= c.n {
		c.cancel()
	}
}

// files lists a run folder's files, relative, with dates and ids made
// neutral.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	neutral := regexp.MustCompile(`\d{4}-?\d\d-?\d\d[T_-]\d\d[-:]?\d\d[-:]?\d\d(\.\d+)?Z?`)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "evals/cache") {
			return nil // the answer cache, not a result
		}
		out = append(out, neutral.ReplaceAllString(rel, "DATE"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// shape is report.json without what two runs never share: measurements,
// times, ids.
func shape(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, release.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "run_id", "report_id", "generated_at", "result_file", "interrupted", "regressions":
					// The resumed run has the clean one as its baseline.
					delete(x, k)
				default:
					x[k] = walk(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case float64:
			return 0.0
		case string:
			if regexp.MustCompile(`^[\d.]+$`).MatchString(x) {
				return "N"
			}
		}
		return v
	}
	out, _ := json.MarshalIndent(walk(v), "", " ")
	return regexp.MustCompile(`\d+(\.\d+)?`).ReplaceAllString(string(out), "N")
}

// An interrupted release keeps what finished, says so, and a resume
// writes the same files and the same report a clean run writes.
func TestInterruptedReleaseResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	url := serveSim(t, "0.0")
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	evals := release.DefaultEvals()
	evals.Tasks = []string{"ttis_arith"}
	cfg := func() release.Config {
		e := evals
		return release.Config{Target: tgt, Workflow: release.WorkflowRelease, Limit: limit.CICommit, Store: store,
			Evals: &e, NumPrompts: 2, MaxConcurrency: 4}
	}

	clean, err := release.Run(context.Background(), cfg())
	if err != nil {
		t.Fatal(err)
	}
	points := len(clean.Report.Benchmarks.Rows)
	if points < 3 {
		t.Fatalf("the ci-commit sweep has %d points; the test needs several", points)
	}

	// Stop during the third benchmark point.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := cfg()
	c.Progress = &cancelAfter{step: "point 3/", n: 1, cancel: cancel}
	part, err := release.Run(ctx, c)
	if !errors.Is(err, release.ErrInterrupted) || part == nil {
		t.Fatalf("interrupted run: %v", err)
	}
	if part.Manifest.Status != runs.StatusInterrupted || part.Report.Acceptance.Verdict == release.VerdictPass {
		t.Errorf("interrupted run: status %s verdict %s", part.Manifest.Status, part.Report.Acceptance.Verdict)
	}
	notRun := 0
	for _, r := range part.Report.Benchmarks.Rows {
		if strings.Contains(r.Error, "interrupted") {
			notRun++
		}
	}
	if notRun == 0 || notRun == points {
		t.Errorf("%d of %d points marked not run", notRun, points)
	}
	md, err := os.ReadFile(filepath.Join(part.Dir, release.ReportMarkdown))
	if err != nil || !strings.Contains(string(md), "INTERRUPTED") {
		t.Errorf("partial report: %v\n%s", err, md)
	}
	// Each point that did not run says so once, in words.
	for _, m := range part.Report.Acceptance.Missing {
		if strings.Count(m.Message, "not run") > 1 || strings.Contains(m.Message, "run: not run") {
			t.Errorf("%s: %q says it twice", m.Key, m.Message)
		}
	}
	if strings.Contains(string(md), "not run: not run") || !strings.Contains(string(md), "did not run: the run was interrupted") {
		t.Errorf("partial report words a point that did not run badly:\n%s", md)
	}

	cfg2, ref, err := release.LoadConfig(context.Background(), part.Dir)
	if err != nil || ref.BaseURL != tgt.BaseURL || cfg2.Limit != limit.CICommit || cfg2.Evals == nil || !slices.Equal(cfg2.Evals.Tasks, evals.Tasks) {
		t.Fatalf("saved plan %+v %+v %v", cfg2, ref, err)
	}
	if b, _ := os.ReadFile(filepath.Join(part.Dir, release.ConfigFile)); strings.Contains(string(b), "Bearer") {
		t.Errorf("the plan holds a credential: %s", b)
	}
	cfg2.Target, cfg2.Store = tgt, store
	done, err := release.Resume(context.Background(), cfg2, part.Manifest.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Manifest.ID != part.Manifest.ID || done.Manifest.Status != runs.StatusComplete || done.Report.Interrupted {
		t.Errorf("resumed run: %+v", done.Manifest)
	}
	if got, want := files(t, done.Dir), files(t, clean.Dir); !slices.Equal(got, want) {
		t.Errorf("resumed run files differ from a clean run's:\n%s\n---\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := shape(t, done.Dir), shape(t, clean.Dir); got != want {
		t.Errorf("resumed report.json differs from a clean run's:\n%s\n---\n%s", got, want)
	}
	if _, err := release.Resume(context.Background(), cfg2, part.Manifest.ID); err == nil || !strings.Contains(err.Error(), "complete") {
		t.Errorf("resuming a complete run: %v", err)
	}
}

// Ctrl-C during `ttisctl bench`: exit 130, the finished points kept, the
// resume command printed, and `--resume` finishing the run.
func TestBenchSIGINTThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve and ttisctl")
	}
	_, ttisctl := build(t)
	url := serveSim(t, "0.002")
	state := t.TempDir()
	cmd := exec.Command(ttisctl, "bench", "--url", url, "--device", "n150", "--limit", "ci-commit", "--num-prompts", "2", "--state-dir", state, "--no-progress")
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	signalled := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !signalled && strings.Contains(sc.Text(), "point 3/") {
			_ = cmd.Process.Signal(os.Interrupt)
			signalled = true
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("bench after SIGINT: %v, want exit 130\n%s%s", err, out.String(), log.String())
	}
	m := regexp.MustCompile(`--resume (\S+)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no resume hint:\n%s", log.String())
	}
	store := &runs.Store{Root: filepath.Join(state, "runs")}
	man, dir, err := store.Open(context.Background(), m[1])
	if err != nil || man.Status != runs.StatusInterrupted {
		t.Fatalf("run %s: %+v %v", m[1], man, err)
	}
	results, _ := filepath.Glob(filepath.Join(dir, "benchmarks", "benchmark_*.json"))
	if len(results) < 2 {
		t.Errorf("%d finished points kept, want at least 2", len(results))
	}
	o, rc := ctl(t, ttisctl, "bench", "--resume", m[1], "--state-dir", state, "--no-progress")
	if rc != 0 {
		t.Fatalf("resume: exit %d\n%s", rc, o)
	}
	man, _, _ = store.Open(context.Background(), m[1])
	all, _ := filepath.Glob(filepath.Join(dir, "benchmarks", "benchmark_*.json"))
	if man.Status != runs.StatusComplete || man.Verdict != release.VerdictPass || len(all) <= len(results) {
		t.Errorf("after resume: %+v, %d point files (had %d)", man, len(all), len(results))
	}
}

// A unit's [evals] overrides shape its releases: the tasks it names run
// with its limits, and the references it leaves out are not measured.
func TestUnitEvalOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	url := serveSim(t, "0.0")
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	tgt.View.Evals = units.Evals{Tasks: []string{"ttis_arith"}, Limits: map[string]float64{"ttis_arith": 2}}
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	out, err := release.Run(context.Background(), release.Config{Target: tgt, Workflow: release.WorkflowEvals, Limit: limit.Full, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var ran, notSelected int
	for _, r := range out.Report.Evals.Rows {
		switch {
		case r.Task == "ttis_arith":
			ran++
			if r.Samples != 2 {
				t.Errorf("ttis_arith ran %d documents, want the unit's limit 2", r.Samples)
			}
		case r.Role == release.RoleReference && strings.HasPrefix(r.NotRun, "not selected"):
			notSelected++
		}
	}
	if ran != 1 || notSelected == 0 || out.Report.Acceptance.Verdict != release.VerdictIncomplete {
		t.Errorf("ran %d, references not selected %d, verdict %s", ran, notSelected, out.Report.Acceptance.Verdict)
	}
}
