package ctl

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
	"github.com/ttis-dev/ttis/units"
)

func TestReorder(t *testing.T) {
	app := App("test")
	for _, tc := range []struct{ in, want, path string }{
		{"status a -o json", "status --socket s -o json a", "status"},
		{"status -o json a", "status --socket s -o json a", "status"},
		{"status a -n 3 b --output=json", "status --socket s --output=json -n 3 a b", "status"},
		{"status a -- -o json", "status --socket s a -- -o json", "status"},
		{"model create x --seed 3 --force", "model create --socket s --seed 3 --force x", "model create"},
		{"model --seed 3 create x", "model --socket s --seed 3 create x", "model"},
		{"bench u --no-progress --limit smoke", "bench --socket s --no-progress --limit smoke u", "bench"},
		{"logs -f u", "logs --socket s -f u", "logs"},
		{"frobnicate -x", "--socket s frobnicate -x", ""},
		// Globals before a command move to it, in order: the last wins.
		{"model -o json create x --socket t", "model create --socket s -o json --socket t x", "model create"},
	} {
		args := append([]string{"ttisctl", "--socket", "s"}, strings.Fields(tc.in)...)
		got, path := reorder(app, args)
		if strings.Join(got[1:], " ") != tc.want || strings.Join(path, " ") != tc.path {
			t.Errorf("reorder(%q) = %q, path %q; want %q, %q", tc.in, strings.Join(got[1:], " "), strings.Join(path, " "), tc.want, tc.path)
		}
	}
}

// fullDaemon serves every control API endpoint ttisctl uses, for one unit
// whose server is inf.
func fullDaemon(t *testing.T, unit api.UnitDetail, runsDir string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ttisd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
	known := func(w http.ResponseWriter, r *http.Request) bool {
		if r.PathValue("name") != unit.Name {
			w.WriteHeader(http.StatusNotFound)
			enc(w, api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeNotFound, Message: "unit " + r.PathValue("name") + " not found"}})
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) { enc(w, api.Info{RunsDir: runsDir}) })
	mux.HandleFunc("GET /v1/units", func(w http.ResponseWriter, _ *http.Request) { enc(w, api.UnitList{Units: []api.Unit{unit.Unit}}) })
	mux.HandleFunc("GET /v1/units/{name}", func(w http.ResponseWriter, r *http.Request) {
		if known(w, r) {
			enc(w, unit)
		}
	})
	mux.HandleFunc("POST /v1/units/{name}/{verb}", func(w http.ResponseWriter, r *http.Request) {
		if known(w, r) {
			enc(w, unit)
		}
	})
	mux.HandleFunc("GET /v1/units/{name}/logs", func(w http.ResponseWriter, r *http.Request) {
		if known(w, r) {
			enc(w, api.LogLine{Time: time.Unix(0, 0), Stream: "ttisd", Text: "Server is ready."})
		}
	})
	mux.HandleFunc("POST /v1/reload", func(w http.ResponseWriter, _ *http.Request) { enc(w, api.ReloadResult{Units: 1}) })
	mux.HandleFunc("GET /v1/devices", func(w http.ResponseWriter, _ *http.Request) { enc(w, api.Devices{Root: "/dev/tenstorrent"}) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}

// Every command reads its flags before or after its arguments alike: the
// same output (run ids and times aside) and the same exit status. A
// command missing from the table fails the test.
func TestFlagsInBothPositions(t *testing.T) {
	var n atomic.Int32
	inf := fakeInference(t, false, &n)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	unit := api.UnitDetail{Unit: api.Unit{View: units.View{Name: "simu", Model: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "sim",
		Listen: strings.TrimPrefix(inf.URL, "http://")}, State: api.StateActive}}
	sock := fullDaemon(t, unit, filepath.Join(state, "runs"))
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("model = \"Qwen3-8B\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vllmUnit := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(vllmUnit, []byte("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nchips = [0]\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "tiny.gguf")
	if out, code := runCtl(t, "model", "create", model); code != 0 {
		t.Fatalf("model create: %d %s", code, out)
	}
	secret := filepath.Join(dir, "jwt")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: []byte(`{"problem":"1+1?","answer":"2"}` + "\n")}})
	fake.SetBranch("model", "org/tiny", "main", []hubtest.File{{Path: "config.json", Content: []byte("{}")}, {Path: "README.md", Content: []byte("# tiny")}})
	bench := []string{"--url", inf.URL, "--isl", "8", "--osl", "2", "--num-prompts", "2", "--no-server-tokenizer", "--num-warmups", "0", "--no-progress", "--state-dir", state}
	// Each case: positional arguments, then flags.
	cases := map[string][2][]string{
		"status":         {{"simu"}, {"-n", "1", "-o", "json"}},
		"start":          {{"simu"}, {"--wait", "1s"}},
		"stop":           {{"simu"}, {"-o", "table"}},
		"restart":        {{"simu"}, {"--wait", "1s"}},
		"reload":         {nil, {"-o", "json"}},
		"logs":           {{"simu"}, {"-n", "5", "-o", "json"}},
		"devices":        {nil, {"-o", "json"}},
		"validate":       {{good}, {"-o", "json"}},
		"catalog":        {{"Qwen3-8B"}, {"--device", "n150", "-o", "json"}},
		"bench":          {nil, bench},
		"eval":           {nil, {"--url", inf.URL, "--task", "ttis_arith", "--limit", "2", "--no-progress", "--state-dir", state, "-o", "json"}},
		"release":        {nil, {"--url", inf.URL, "--workflow", "benchmarks", "--no-progress", "--state-dir", state, "-o", "json"}},
		"test":           {nil, {"--url", inf.URL, "--plan", "--skip", "stop", "--state-dir", state, "-o", "json"}},
		"runs":           {{"url-served-model"}, {"--state-dir", state, "-n", "1"}},
		"report":         {{"RUN"}, {"--state-dir", state, "--format", "path"}},
		"model create":   {{filepath.Join(dir, "m.gguf")}, {"--preset", "tiny", "--seed", "2", "--force"}},
		"model info":     {{model}, {"-o", "json"}},
		"model bench":    {{model}, {"-p", "4", "-n", "2", "--batch", "1", "-r", "1", "-o", "json"}},
		"plan":           {{vllmUnit}, {"--units-dir", dir, "-o", "json"}},
		"doctor":         {{vllmUnit}, {"--root", dir, "-o", "json"}},
		"token":          {nil, {"--secret-file", secret, "--team", "t", "--token-id", "i", "--ttl", "1h"}},
		"dataset pull":   {{"r1_math500"}, {"--hf-endpoint", fake.URL, "--offline=false", "--state-dir", state, "-o", "json"}},
		"dataset list":   {{"r1_math500"}, {"--state-dir", state, "-o", "json"}},
		"dataset verify": {{"r1_math500"}, {"--state-dir", state, "-o", "json"}},
		"model pull":     {{"org/tiny"}, {"--hf-endpoint", fake.URL, "--offline=false", "--state-dir", state, "--exclude", "*.md"}},
	}
	var names []string
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) > 0 {
				walk(prefix+c.Name+" ", c.Subcommands)
				continue
			}
			names = append(names, prefix+c.Name)
		}
	}
	walk("", App("test").Commands)
	// Measurements, run ids, times and tokens differ between two runs;
	// the shape of the output must not.
	runID := regexp.MustCompile(`\d{8}T\d{6}Z-[a-z-]+-[0-9a-f]{6}|eyJ[\w.-]+`)
	number := regexp.MustCompile(`\d+(\.\d+)?([eE][+-]?\d+)?`)
	// Durations change unit with their size ("900ms", "1.2s").
	duration := regexp.MustCompile(`\b(\d+(\.\d+)?(h|ms|µs|ns|m|s))+\b`)
	normal := func(s string) string {
		return number.ReplaceAllString(duration.ReplaceAllString(runID.ReplaceAllString(s, "ID"), "DURATION"), "N")
	}
	for _, name := range names {
		tc, ok := cases[name]
		if !ok {
			t.Errorf("command %q has no case in the flag-position table", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			args := tc[0]
			if name == "report" {
				out, _, _ := runCtlStdout(t, "runs", "--state-dir", state, "-o", "json")
				var list []struct{ ID string }
				if json.Unmarshal([]byte(out), &list) != nil || len(list) == 0 {
					t.Skipf("no run to report: %s", out)
				}
				args = []string{list[0].ID}
			}
			cmd := strings.Fields(name)
			before := append(append(append([]string{"--socket", sock}, cmd...), tc[1]...), args...)
			after := append(append(append([]string{"--socket", sock}, cmd...), args...), tc[1]...)
			o1, e1, c1 := runCtlStdout(t, before...)
			o2, e2, c2 := runCtlStdout(t, after...)
			if c1 != c2 {
				t.Fatalf("exit %d with flags first, %d with flags last\n%s%s\n---\n%s%s", c1, c2, o1, e1, o2, e2)
			}
			if c1 == exitUsage {
				t.Fatalf("usage error: %s%s", o1, e1)
			}
			n1, n2 := normal(o1), normal(o2)
			if name != "token" && n1 != n2 {
				t.Errorf("output differs with flags first and last:\n%s\n---\n%s", n1, n2)
			}
		})
	}
}
