package metrics

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

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

// exported returns the names of every series ttisd exports, with the
// _bucket, _sum and _count series of histograms.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names, err := newMetrics(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			out[n+suffix] = true
		}
	}
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

const monitoring = "../../../packaging/monitoring"

// notOurs are series Prometheus makes itself, not ttisd.
var notOurs = map[string]bool{"up": true}

// metricNames parses a PromQL expression and returns the metric names it
// selects.
func metricNames(t *testing.T, p parser.Parser, where, expr string) []string {
	t.Helper()
	e, err := p.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	if len(names) == 0 {
		t.Errorf("%s: %q selects no metric", where, expr)
	}
	return names
}

// The alert rules parse as Prometheus parses rule files (promtool check
// rules), and use only metrics ttisd exports.
func TestAlertRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	path := filepath.Join(monitoring, "ttisd-alerts.yml")
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	have := exported(t)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Annotations["summary"] == "" {
				t.Errorf("alert %s has no summary", r.Alert)
			}
			for _, n := range metricNames(t, p, path+": "+r.Alert, r.Expr) {
				if !have[n] && !notOurs[n] {
					t.Errorf("alert %s uses %s, which ttisd does not export", r.Alert, n)
				}
			}
		}
	}
	for _, want := range []string{"TtisdUnitFailed", "TtisdUnitRestarting", "TtisdScheduledRunFailed", "TtisdApplyErrors"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`)

// Every query of the dashboard parses and uses only metrics ttisd
// exports (Grafana's own variables are inside label matchers only).
func TestDashboard(t *testing.T) {
	path := filepath.Join(monitoring, "ttisd-dashboard.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: no uid or no panels", path)
	}
	p := parser.NewParser(parser.Options{})
	have := exported(t)
	used := map[string]bool{}
	for _, panel := range dash.Panels {
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, tg := range panel.Targets {
			for _, n := range metricNames(t, p, "panel "+panel.Title, tg.Expr) {
				used[n] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		m := labelValues.FindStringSubmatch(q["query"].(string))
		if m == nil {
			t.Errorf("variable %s: query %v is not label_values(metric, label)", v.Name, v.Query)
			continue
		}
		used[m[1]] = true
	}
	for n := range used {
		if !have[n] {
			t.Errorf("the dashboard uses %s, which ttisd does not export", n)
		}
	}
	for _, want := range []string{"ttisd_unit_state", "ttisd_unit_restarts_total", "ttisd_schedule_last_result", "ttisd_control_request_duration_seconds_bucket"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// A metric name used by the rules that ttisd does not export must fail the
// check, or the check proves nothing.
func TestMetricCheckCatchesUnknownNames(t *testing.T) {
	have := exported(t)
	p := parser.NewParser(parser.Options{})
	names := metricNames(t, p, "test", `ttisd_unit_statee{state="failed"} == 1`)
	if len(names) != 1 || have[names[0]] {
		t.Fatalf("names %v; a misspelt metric passed", names)
	}
}
