package metrics

import (
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/schedule"
	"github.com/ttis-dev/ttis/units"
)

// fakeSource is a daemon with one unit in each state and a schedule that
// has fired, so that every series is exported.
type fakeSource struct{}

func (fakeSource) List() api.UnitList {
	var l api.UnitList
	for i, s := range states {
		l.Units = append(l.Units, api.Unit{View: units.View{Name: "u" + s, Model: "m", Device: "n150", Runtime: "sim", Listen: "127.0.0.1:1"},
			State: s, RestartsTotal: i, LastStartSeconds: 1.5, Adopted: i == 0, LoadError: map[bool]string{true: "a.toml:1:1: bad"}[i == 1]})
	}
	l.Errors = []string{"read units folder: gone"}
	return l
}

func (fakeSource) Info() api.Info { return api.Info{LastScan: time.Unix(1700000000, 0)} }

func (fakeSource) Schedules() []schedule.Fire {
	at := time.Unix(1700000000, 0)
	return []schedule.Fire{
		{Unit: "uactive", Workflow: "release", Calendar: "0 2 * * *", Next: at.Add(time.Hour), LastFire: at, LastResult: "failed: acceptance failed (2 blockers)"},
		{Unit: "uactive", Workflow: "evals", Calendar: "0 3 * * *", Next: at.Add(time.Hour)},
	}
}

func newMetrics(t *testing.T) *Metrics {
	t.Helper()
	m := New(fakeSource{}, "v-test")
	m.Applied("uactive", "reload")
	m.Error("apply")
	m.Control("GET /v1/units", 200, 3*time.Millisecond)
	return m
}

// series returns the name of every series ttisd exports: a histogram's
// _bucket, _sum and _count, a summary's quantiles, _sum and _count.
func series(t *testing.T) []string {
	t.Helper()
	mfs, err := newMetrics(t).reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		n := mf.GetName()
		switch mf.GetType().String() {
		case "HISTOGRAM":
			out = append(out, n+"_bucket", n+"_sum", n+"_count")
		case "SUMMARY":
			out = append(out, n, n+"_sum", n+"_count")
		default:
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(newMetrics(t).Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`ttisd_unit_state{state="active",unit="uactive"} 1`,
		`ttisd_unit_state{state="failed",unit="uactive"} 0`,
		`ttisd_unit_restarts_total{unit="ufailed"} 4`,
		`ttisd_unit_last_start_duration_seconds{unit="uactive"} 1.5`,
		`ttisd_unit_file_error{unit="uactivating"} 1`,
		`ttisd_unit_adopted{unit="uinactive"} 1`,
		`ttisd_units_folder_error 1`,
		`ttisd_units_last_scan_timestamp_seconds 1.7e+09`,
		`ttisd_schedule_last_result{calendar="0 2 * * *",result="failed",unit="uactive",workflow="release"} 1`,
		`ttisd_schedule_next_run_timestamp_seconds{calendar="0 3 * * *",unit="uactive",workflow="evals"} 1.7000036e+09`,
		`ttisd_unit_changes_total{action="reload",unit="uactive"} 1`,
		`ttisd_reconcile_errors_total{kind="apply"} 1`,
		`ttisd_reconcile_errors_total{kind="unit_file"} 0`,
		`ttisd_control_request_duration_seconds_count{code="OK",route="GET /v1/units"} 1`,
		`ttisd_build_info{goversion="`,
		`process_resident_memory_bytes `,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	// A schedule that never fired has no last run and no verdict.
	if strings.Contains(body, `ttisd_schedule_last_run_timestamp_seconds{calendar="0 3 * * *"`) {
		t.Error("a schedule that never fired has a last run")
	}
}

func TestResult(t *testing.T) {
	for last, want := range map[string]string{"ok": ResultOK, "failed: x": ResultFailed, "skipped: busy": ResultSkipped, "started": ResultRunning} {
		if got := Result(last); got != want {
			t.Errorf("Result(%q) = %q, want %q", last, got, want)
		}
	}
}

// seriesList is the committed list of what ttisd exports, beside the
// example alerts and dashboard that use it. packaging/conformance (its
// own module, with Prometheus's parsers) checks that they use only these
// names.
const seriesList = "../../../packaging/monitoring/ttisd-series.txt"

var update = flag.Bool("update", false, "rewrite "+seriesList)

// The committed series list is what ttisd exports, so a new, renamed or
// removed series is a diff, and the alerts and dashboard are checked
// against the truth.
func TestSeriesList(t *testing.T) {
	var b strings.Builder
	b.WriteString("# The series ttisd exports at /metrics (metrics_listen), one a line.\n")
	b.WriteString("# Rewrite: go test ./daemon/internal/metrics -run TestSeriesList -update\n")
	b.WriteString("# packaging/conformance checks that ttisd-alerts.yml and ttisd-dashboard.json use only these.\n")
	for _, n := range series(t) {
		b.WriteString(n + "\n")
	}
	if *update {
		if err := os.WriteFile(seriesList, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(seriesList)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Errorf("%s is not what ttisd exports; rewrite it with\n\tgo test ./daemon/internal/metrics -run TestSeriesList -update\nand check the alerts and dashboard still hold (cd packaging/conformance && go test ./...).\ngot:\n%s", seriesList, b.String())
	}
}
