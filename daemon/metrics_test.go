package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ttisd serves its metrics on metrics_listen: unit states from the same
// source as ttisctl status, and the control API's latency.
func TestMetricsEndpoint(t *testing.T) {
	addr := freePort(t)
	d := startDaemon(t, map[string]string{"a": simUnit(freePort(t), "")}, "--metrics-listen", addr)
	d.waitUnit(t, "a", "active", active)
	if out, code := d.ctl(t, "status"); code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	want := []string{
		`ttisd_unit_state{state="active",unit="a"} 1`,
		`ttisd_unit_changes_total{action="start",unit="a"} 1`,
		`ttisd_control_request_duration_seconds_count{code="OK",route="GET /v1/units"}`,
		`ttisd_unit_last_start_duration_seconds{unit="a"}`,
		`process_resident_memory_bytes`,
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", missing, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
