package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// percentile returns the p-th percentile (0..1) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// BenchmarkEditToHealthy measures a unit edit until the new server is
// ready (active, with the edited text), through the real daemon: the
// folder watch debounce, the stop of the old server, the start of the new
// one and its /health. Run with -benchtime=20x.
func BenchmarkEditToHealthy(b *testing.B) {
	listen := freePort(b)
	d := startDaemon(b, map[string]string{"a": simUnit(listen, "")})
	pid := d.waitUnit(b, "a", "active", active).PID
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		desc := fmt.Sprintf("edit %d", i)
		start := time.Now()
		// A new seed shapes the server, so the edit restarts it (a
		// description alone would not touch it).
		d.write(b, "a", strings.Replace(simUnit(listen, "description = "+strconv.Quote(desc)), "time_scale = 0", fmt.Sprintf("time_scale = 0\nseed = %d", i+1), 1))
		// A new process, ready: the old one may still show as active
		// with the new description for a moment while it is stopped.
		u := d.waitUnitFast(b, "a", 0, func(u api.UnitDetail) bool { return active(u) && u.Description == desc && u.PID != pid })
		lat = append(lat, time.Since(start))
		pid = u.PID
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.5).Seconds(), "p50_s")
	b.ReportMetric(percentile(lat, 0.99).Seconds(), "p99_s")
}

// BenchmarkLiveEditApplied measures a limits edit from the file's save to
// the running server logging the new value (SIGHUP, no restart): compare
// with BenchmarkEditToHealthy. Run with -benchtime=20x.
func BenchmarkLiveEditApplied(b *testing.B) {
	listen := freePort(b)
	d := startDaemon(b, map[string]string{"a": simUnit(listen, "[limits]\nmax_queue = 100\n")})
	pid := d.waitUnit(b, "a", "active", active).PID
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		q := fmt.Sprintf("max_queue=%d", 101+i)
		start := time.Now()
		d.write(b, "a", simUnit(listen, fmt.Sprintf("[limits]\nmax_queue = %d\n", 101+i)))
		d.waitUnitFast(b, "a", 50, func(u api.UnitDetail) bool {
			if u.PID != pid {
				b.Fatalf("a limits edit restarted the server")
			}
			for _, l := range u.Logs {
				if strings.Contains(l.Text, "live settings applied") && strings.Contains(l.Text, q+" ") {
					return true
				}
			}
			return false
		})
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.5).Seconds(), "p50_s")
	b.ReportMetric(percentile(lat, 0.99).Seconds(), "p99_s")
}

// waitUnitFast polls every millisecond so the poll adds little to the
// measured latency.
// lines is how many log lines the detail carries.
func (d *daemon) waitUnitFast(b *testing.B, name string, lines int, ok func(api.UnitDetail) bool) api.UnitDetail {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if u, err := d.cl.Unit(context.Background(), name, lines); err == nil && ok(u) {
			return u
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("unit %s did not get there", name)
	return api.UnitDetail{}
}

// BenchmarkStatus100Units runs "ttisctl status" (the real binary, process
// start included) against a daemon supervising 100 sim units, and reports
// the daemon's resident memory. Run with -benchtime=20x.
func BenchmarkStatus100Units(b *testing.B) {
	const n = 100
	units := map[string]string{}
	for i, listen := range freePorts(b, n) {
		units[fmt.Sprintf("u%03d", i)] = simUnit(listen, "")
	}
	d := startDaemon(b, units)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		l, err := d.cl.Units(context.Background())
		if err == nil {
			up := 0
			for _, u := range l.Units {
				if u.State == api.StateActive {
					up++
				}
			}
			if up == n {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("not all %d units became active", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var lat, api []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		out, err := exec.Command(ttisctlBin, "--socket", d.socket, "status").Output()
		lat = append(lat, time.Since(start))
		if err != nil || strings.Count(string(out), "\n") != n+1 {
			b.Fatalf("status: %v\n%s", err, out)
		}
		start = time.Now()
		if _, err := d.cl.Units(context.Background()); err != nil {
			b.Fatal(err)
		}
		api = append(api, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(api)
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "ttisctl_status_p50_ms")
	b.ReportMetric(float64(percentile(api, 0.5).Microseconds())/1000, "api_units_p50_ms")
	b.ReportMetric(float64(rssKiB(b, d.cmd.Process.Pid))/1024, "daemon_rss_MB")
}

// freePorts returns n distinct free loopback addresses: the listeners stay
// open until all are chosen, so the kernel cannot hand one out twice.
func freePorts(b *testing.B, n int) []string {
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out
}

func rssKiB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
