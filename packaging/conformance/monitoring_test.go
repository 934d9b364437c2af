package conformance

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const monitoring = "../monitoring"

// exported reads the series ttisd exports from the list
// daemon/internal/metrics keeps equal to them (TestSeriesList there).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(monitoring, "ttisd-series.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out[line] = true
		}
	}
	if len(out) < 20 || !out["ttisd_unit_state"] {
		t.Fatalf("%s lists %d series, without ttisd_unit_state", filepath.Join(monitoring, "ttisd-series.txt"), len(out))
	}
	return out
}

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
