// Package metrics exports ttisd's own state to Prometheus: unit states,
// restarts, start durations, what edits did, reconcile errors, scheduled
// runs and their verdicts, control API latency, and the process and Go
// runtime metrics of client_golang. Unit and schedule series are read from
// the daemon at scrape time, so they never drift from ttisctl status.
//
// The example alert rules and Grafana dashboard in packaging/monitoring/
// use these names: TestSeriesList keeps packaging/monitoring/ttisd-series.txt
// equal to what is exported, and packaging/conformance checks every name
// they use against it with Prometheus's own parsers.
package metrics

import (
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/schedule"
)

// Source is the daemon state the metrics read at each scrape.
type Source interface {
	List() api.UnitList
	Info() api.Info
	Schedules() []schedule.Fire
}

// States a unit is reported in, one series each (1 for the current one).
var states = []string{api.StateInactive, api.StateActivating, api.StateActive, api.StateDeactivating, api.StateFailed}

// Scheduled run results, from schedule.Fire.LastResult.
const (
	ResultOK      = "ok"
	ResultFailed  = "failed"
	ResultSkipped = "skipped"
	ResultRunning = "running"
)

// Metrics holds ttisd's registry and the metrics updated by events.
type Metrics struct {
	reg     *prometheus.Registry
	changes *prometheus.CounterVec
	errors  *prometheus.CounterVec
	control *prometheus.HistogramVec
}

// New registers ttisd's metrics, reading units and schedules from src.
func New(src Source, version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ttisd_unit_changes_total",
			Help: "Edits of unit files applied, by what they took (retune, reload, restart, start, stop, remove).",
		}, []string{"unit", "action"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ttisd_reconcile_errors_total",
			Help: "Problems found while applying the units folder: folder (unreadable), unit_file (a broken text, once per text), apply (a server could not be started, stopped or changed).",
		}, []string{"kind"}),
		control: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ttisd_control_request_duration_seconds",
			Help:    "Control API requests by route and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "code"}),
	}
	for _, k := range []string{"folder", "unit_file", "apply"} {
		m.errors.WithLabelValues(k)
	}
	m.reg.MustRegister(m.changes, m.errors, m.control,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		&stateCollector{src: src},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "ttisd_build_info",
			Help:        "Always 1; the labels say which ttisd runs.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
	)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gather returns the metrics as a scrape would see them (tests).
func (m *Metrics) Gather() ([]string, error) {
	mfs, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(mfs))
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out, nil
}

// Applied counts an applied edit (reconcile.Hooks.Applied).
func (m *Metrics) Applied(unit, action string) { m.changes.WithLabelValues(unit, action).Inc() }

// Error counts a reconcile problem (reconcile.Hooks.Error).
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// Control records one control API request (control.Server.Observe).
func (m *Metrics) Control(route string, code int, d time.Duration) {
	m.control.WithLabelValues(route, http.StatusText(code)).Observe(d.Seconds())
}

var (
	unitLabels   = []string{"unit"}
	descState    = prometheus.NewDesc("ttisd_unit_state", "1 for the state the unit is in (inactive, activating, active, deactivating, failed), 0 for the others.", []string{"unit", "state"}, nil)
	descInfo     = prometheus.NewDesc("ttisd_unit_info", "Always 1; the labels describe the version of the unit that runs.", []string{"unit", "model", "device", "runtime", "listen"}, nil)
	descRestarts = prometheus.NewDesc("ttisd_unit_restarts_total", "Automatic restarts of the unit's server since ttisd started.", unitLabels, nil)
	descStart    = prometheus.NewDesc("ttisd_unit_last_start_duration_seconds", "How long the last start of the unit's server took to answer /health.", unitLabels, nil)
	descFileErr  = prometheus.NewDesc("ttisd_unit_file_error", "1 when the unit file's current text is broken (the last good version, if any, runs).", unitLabels, nil)
	descAdopted  = prometheus.NewDesc("ttisd_unit_adopted", "1 when the unit's server was started by an earlier ttisd and adopted.", unitLabels, nil)
	descScan     = prometheus.NewDesc("ttisd_units_last_scan_timestamp_seconds", "When the units folder was last read (unix time).", nil, nil)
	descFolder   = prometheus.NewDesc("ttisd_units_folder_error", "1 while the units folder cannot be read (running units keep running).", nil, nil)
	schedLabels  = []string{"unit", "workflow", "calendar"}
	descNext     = prometheus.NewDesc("ttisd_schedule_next_run_timestamp_seconds", "Next firing of a [[schedule]] entry (unix time).", schedLabels, nil)
	descLast     = prometheus.NewDesc("ttisd_schedule_last_run_timestamp_seconds", "Last firing of a [[schedule]] entry (unix time); absent before the first.", schedLabels, nil)
	descResult   = prometheus.NewDesc("ttisd_schedule_last_result", "1 for the verdict of the entry's last run (ok, failed, skipped, running), 0 for the others.", append(schedLabels, "result"), nil)
)

// stateCollector reads units and schedules at scrape time.
type stateCollector struct{ src Source }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descInfo, descRestarts, descStart, descFileErr, descAdopted, descScan, descFolder, descNext, descLast, descResult} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.src.List()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, u := range list.Units {
		for _, s := range states {
			gauge(descState, boolValue(u.State == s), u.Name, s)
		}
		gauge(descInfo, 1, u.Name, u.Model, u.Device, u.Runtime, u.Listen)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(u.RestartsTotal), u.Name)
		if u.LastStartSeconds > 0 {
			gauge(descStart, u.LastStartSeconds, u.Name)
		}
		gauge(descFileErr, boolValue(u.LoadError != ""), u.Name)
		gauge(descAdopted, boolValue(u.Adopted), u.Name)
	}
	if scan := c.src.Info().LastScan; !scan.IsZero() {
		gauge(descScan, float64(scan.UnixNano())/1e9)
	}
	gauge(descFolder, boolValue(len(list.Errors) > 0))
	seen := map[string]bool{}
	for _, f := range c.src.Schedules() {
		key := f.Unit + "\x00" + f.Workflow + "\x00" + f.Calendar
		if seen[key] {
			continue // the same entry twice in one unit
		}
		seen[key] = true
		labels := []string{f.Unit, f.Workflow, f.Calendar}
		if !f.Next.IsZero() {
			gauge(descNext, float64(f.Next.Unix()), labels...)
		}
		if f.LastFire.IsZero() {
			continue
		}
		gauge(descLast, float64(f.LastFire.Unix()), labels...)
		res := Result(f.LastResult)
		for _, r := range []string{ResultOK, ResultFailed, ResultSkipped, ResultRunning} {
			gauge(descResult, boolValue(res == r), append(labels, r)...)
		}
	}
}

// Result maps a schedule's last result ("ok", "failed: …", "skipped: …",
// "started") to its verdict label.
func Result(last string) string {
	switch {
	case last == "ok":
		return ResultOK
	case strings.HasPrefix(last, "failed"):
		return ResultFailed
	case strings.HasPrefix(last, "skipped"):
		return ResultSkipped
	}
	return ResultRunning
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
