package ctl

import (
	"strings"
	"testing"
)

func TestParseWorkflowArgs(t *testing.T) {
	got, err := parseWorkflowArgs("  run_mode=single max-concurrent=4\tnum_prompts=3 label=a=b ")
	if err != nil {
		t.Fatal(err)
	}
	want := []workflowArg{{"run_mode", "single"}, {"max_concurrent", "4"}, {"num_prompts", "3"}, {"label", "a=b"}}
	if len(got) != len(want) {
		t.Fatalf("parsed %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"endurance", "=1", "a=1 a=2", "max-concurrent=1 max_concurrent=2"} {
		if _, err := parseWorkflowArgs(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseWorkflowArgs(f *testing.F) {
	f.Add("run_mode=single input_size=128 output-size=64")
	f.Add("a==b  =c")
	f.Fuzz(func(t *testing.T, s string) {
		args, err := parseWorkflowArgs(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range args {
			if a.Key == "" || strings.ContainsAny(a.Key, "- \t\n") || seen[a.Key] {
				t.Fatalf("%q gave key %q", s, a.Key)
			}
			seen[a.Key] = true
		}
	})
}

func TestWorkflowArgsOnCommands(t *testing.T) {
	srv := fakeInference(t, false, nil)
	// run.py's single-point stress keys become bench's flags.
	out, code := runCtl(t, "bench", "--url", srv.URL, "--state-dir", t.TempDir(), "--num-warmups", "0", "--no-progress",
		"--workflow-args", "run_mode=single input_size=8 output-size=4 max_concurrent=2 num_prompts=3 use_server_tokenizer=false")
	if code != 0 || !strings.Contains(out, "Successful requests:                 3") || !strings.Contains(out, "Total generated tokens:              12") {
		t.Fatalf("bench --workflow-args: exit %d\n%s", code, out)
	}
	// run_mode=multiple plans a sweep.
	out, code = runCtl(t, "bench", "--url", srv.URL, "--device", "n150", "--catalog-model", "Llama-3.1-8B-Instruct", "--plan",
		"--state-dir", t.TempDir(), "--workflow-args", "run_mode=multiple")
	if code != 0 || !strings.Contains(out, "Sweep ci-nightly") {
		t.Errorf("run_mode=multiple: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--workflow-args", "input_size=8", "--isl", "16"}, "input_size=8 and --isl 16 disagree"},
		{[]string{"bench", "--workflow-args", "input_size=0"}, "want a positive integer"},
		{[]string{"bench", "--workflow-args", "endurance_mode=true"}, "endurance_mode: not supported: ttis has no 24-hour endurance run"},
		{[]string{"bench", "--workflow-args", "scenarios=chat"}, "scenarios: not supported: a GuideLLM setting"},
		{[]string{"bench", "--workflow-args", "run_mode=custom"}, "run_mode=custom: not supported"},
		{[]string{"bench", "--workflow-args", "run_mode=single", "--limit", "smoke"}, "drop --limit smoke"},
		{[]string{"bench", "--workflow-args", "frobnicate=1"}, "frobnicate: unknown key"},
		{[]string{"bench", "--workflow-args", "plain"}, `token 1 "plain": want key=value`},
		{[]string{"release", "--workflow-args", "input_size=8"}, "input_size applies to ttisctl bench, not to release"},
		{[]string{"eval", "--workflow-args", "num_prompts=8"}, "num_prompts applies to ttisctl bench and release, not to eval"},
	} {
		out, code := runCtl(t, append(tc.args, "--url", srv.URL, "--state-dir", t.TempDir())...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", tc.args, code, exitUsage, tc.want, out)
		}
	}
}
