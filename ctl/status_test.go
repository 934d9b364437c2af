package ctl

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/units"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var sampleUnits = api.UnitList{
	Units: []api.Unit{
		{View: units.View{Name: "llama", Path: "/etc/ttis/units/llama.toml", Model: "Llama-3.1-8B-Instruct", Device: "n300", Chips: []int{0, 1},
			Runtime: "vllm", Listen: "127.0.0.1:8000"}, Hash: "3f2a9c0d11aa22bb", State: api.StateActive, SubState: api.SubRunning,
			PID: 4242, Restarts: 2, Since: now.Add(-2 * time.Hour), LoadState: api.LoadLoaded, LastExit: "code=killed, signal=KILL"},
		{View: units.View{Name: "loop", Path: "/etc/ttis/units/loop.toml", Model: "Qwen3-8B", Device: "n150", Runtime: "sim", Listen: "127.0.0.1:8001"},
			State: api.StateFailed, SubState: api.SubFailed, Result: api.ResultStartLimitHit, Restarts: 5, Since: now.Add(-90 * time.Second),
			LoadState: api.LoadLoaded, LastError: `start limit hit: 5 starts within 10m0s; run "ttisctl restart loop" or edit the unit`},
		{View: units.View{Name: "typo", Path: "/etc/ttis/units/typo.toml"}, State: api.StateFailed, SubState: api.SubFailed, LoadState: api.LoadError,
			LastError: "/etc/ttis/units/typo.toml:3:1: prot: unknown key"},
	},
	Errors: []string{"read units folder /etc/ttis/units: permission denied; running units keep running"},
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestStatusTableGolden(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, sampleUnits, now)
	golden(t, "status_table.golden", b.Bytes())
}

func TestStatusDetailGolden(t *testing.T) {
	var b bytes.Buffer
	stale := api.UnitDetail{
		Unit:        sampleUnits.Units[0],
		Detail:      "using last good version from 2026-03-01T10:00:00Z; new version invalid: /etc/ttis/units/llama.toml:9:3: limits.max_queue: must be at least 1",
		MemoryBytes: 17_200_000,
		Schedules: []api.Schedule{
			{Workflow: "release", Calendar: "0 2 * * *", Limit: "ci-nightly", Next: now.Add(5 * time.Hour), LastResult: "ok"},
			{Workflow: "benchmarks", Calendar: "*/30 * * * *", Limit: "smoke", Next: now.Add(10 * time.Minute), Running: true},
		},
		Logs: []api.LogLine{
			{Time: now.Add(-time.Hour), Stream: "ttisd", Text: "Started server, pid 4242."},
			{Time: now.Add(-time.Hour + time.Second), Stream: "stderr", Text: "INFO ready model=Llama-3.1-8B-Instruct"},
		},
	}
	stale.LoadState = api.LoadStale
	stale.AuthMode = "jwt"
	stale.Adopted = true
	stale.Workers = "4 workers: 4 alive, 3 ready, 1 restarts, 2 errors"
	stale.Pending = &api.Change{Action: api.ChangeReload, Fields: []string{"limits.max_queue"}}
	stale.LastChange = &api.Change{Action: api.ChangeRetune, Fields: []string{"description", "schedule"}, At: now.Add(-2 * time.Hour)}
	printDetail(&b, stale, now)
	b.WriteString("\n")
	printDetail(&b, api.UnitDetail{Unit: sampleUnits.Units[2], Detail: "unit file invalid: " + sampleUnits.Units[2].LastError}, now)
	golden(t, "status_detail.golden", b.Bytes())
}

func TestAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"}, {42 * time.Second, "42s"}, {5 * time.Minute, "5m"}, {3 * time.Hour, "3h"}, {72 * time.Hour, "3d"},
	}
	for _, tt := range tests {
		if got := age(now.Add(-tt.d), now); got != tt.want {
			t.Errorf("age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if age(time.Time{}, now) != "-" {
		t.Error("zero time")
	}
}
