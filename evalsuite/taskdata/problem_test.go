package taskdata_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// A failed pull is explained in three parts: the task's own data, a cause
// worded without the task (so tasks failing for one reason share it), and
// the command that fetches the task's data.
func TestExplain(t *testing.T) {
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	down, _ := hub.New(hub.Config{Endpoint: closed, CacheDir: t.TempDir(), MaxAttempts: 1, MaxRetryWait: time.Millisecond})
	offline, _ := hub.New(hub.Config{Endpoint: closed, CacheDir: t.TempDir(), Offline: true})
	causes := map[string]string{}
	for _, tc := range []struct {
		name  string
		hc    *hub.Client
		cause string
	}{
		{"unreachable", down, "the Hub could not be reached: " + closed + " ("},
		{"offline", offline, "the run is offline and the Hub cache lacks the data"},
	} {
		for _, task := range []string{"meta_gpqa_cot", "longbench_code_e"} {
			_, err := taskdata.Pull(context.Background(), tc.hc, task, model)
			if err == nil {
				t.Fatalf("%s %s: pulled", tc.name, task)
			}
			p := taskdata.Explain(task, model, err)
			if !strings.HasPrefix(p.Cause, tc.cause) || strings.Contains(p.Cause, task) || !errors.Is(p, err) {
				t.Errorf("%s %s: cause %q, want %q… without the task's name", tc.name, task, p.Cause, tc.cause)
			}
			if causes[tc.name] != "" && causes[tc.name] != p.Cause {
				t.Errorf("%s: two tasks got two causes: %q, %q", tc.name, causes[tc.name], p.Cause)
			}
			causes[tc.name] = p.Cause
			if p.Task != task || p.Fix != taskdata.PullCommandFor([]string{task}, model) || !strings.Contains(p.Error(), p.Data) {
				t.Errorf("%s %s: %+v", tc.name, task, p)
			}
		}
	}
	if got := taskdata.Describe("longbench_code_e", model); got != "Xnhyacinth/LongBench (lcc_e, repobench-p_e; split test)" {
		t.Errorf("Describe(longbench_code_e) = %q", got)
	}
	if got := taskdata.Describe("meta_gpqa_cot", model); got != "meta-llama/Llama-3.1-8B-Instruct-evals (Llama-3.1-8B-Instruct-evals__gpqa__details; split latest)" {
		t.Errorf("Describe(meta_gpqa_cot) = %q", got)
	}
	if got := taskdata.PullCommandFor([]string{"longbench_code_e", "meta_gpqa_cot", "longbench_code_e"}, model); got != "ttisctl dataset pull longbench_code_e meta_gpqa_cot --catalog-model Llama-3.1-8B-Instruct" {
		t.Errorf("PullCommandFor = %q", got)
	}
	if got := taskdata.PullCommandFor([]string{"longbench_code_e"}, model); got != "ttisctl dataset pull longbench_code_e" {
		t.Errorf("PullCommandFor(longbench_code_e) = %q", got)
	}
}
