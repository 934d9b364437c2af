package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
)

func recorded(t *testing.T, name string) func(context.Context) ([]byte, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tt-smi", name))
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context) ([]byte, error) { return b, nil }
}

func noTTSMI(context.Context) ([]byte, error) { return nil, errNoTTSMI }

func fakeEnv(t *testing.T, root, snapshot string) Env {
	e := Env{
		Root:      filepath.Join("testdata", "roots", root),
		LookPath:  func(string) (string, error) { return "/usr/bin/docker", nil },
		Docker:    func(context.Context) error { return nil },
		FreeBytes: func(string) (uint64, error) { return 500 * gib, nil },
		TTSMI:     noTTSMI,
	}
	if snapshot != "" {
		e.TTSMI = recorded(t, snapshot)
	}
	return e
}

func spec(t *testing.T, model, device string) *catalog.Spec {
	t.Helper()
	s, err := catalog.Lookup(model, device)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pinnedSpec is a catalog spec on device with the firmware and KMD pins
// the catalog's templates use (">=18.6.0", ">=2.1.0").
func pinnedSpec(t *testing.T, model, device string) *catalog.Spec {
	t.Helper()
	s := spec(t, model, device)
	s.SystemRequirements = &catalog.SystemRequirements{Firmware: ">=18.6.0", KMD: ">=2.1.0"}
	return s
}

func statuses(r Report) map[string]Status {
	out := map[string]Status{}
	for _, c := range r.Checks {
		out[c.Name] = c.Status
	}
	return out
}

func TestReadyT3K(t *testing.T) {
	s := pinnedSpec(t, "Llama-3.1-70B-Instruct", "t3k")
	r := Run(context.Background(), fakeEnv(t, "t3k-ready", "t3k.json"), Need{Spec: s, Chips: []int{0, 1, 2, 3, 4, 5, 6, 7}, Docker: true, HFToken: true})
	for _, c := range r.Checks {
		if c.Status != Pass {
			t.Errorf("%s: %s (%s)", c.Name, c.Status, c.Detail)
		}
	}
	if !r.Ready || r.Summary() != "host ready" {
		t.Errorf("ready = %v: %s", r.Ready, r.Summary())
	}
}

func TestBareHostIsNotReady(t *testing.T) {
	s := spec(t, "Llama-3.1-70B-Instruct", "t3k")
	e := fakeEnv(t, "bare", "")
	e.Docker = func(context.Context) error { return errors.New("Cannot connect to the Docker daemon") }
	e.FreeBytes = func(string) (uint64, error) { return 20 * gib, nil }
	r := Run(context.Background(), e, Need{Spec: s, Chips: []int{0, 1, 2, 3, 4, 5, 6, 7}, Docker: true, WeightsCache: t.TempDir()})
	if r.Ready {
		t.Fatal("a host without chips is ready")
	}
	want := map[string]Status{"ram": Fail, "disk": Fail, "hugepages": Fail, "chips": Fail, "tt-smi": Warn, "kmd": Fail, "firmware": Warn, "docker": Fail, "weights": Warn}
	got := statuses(r)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	for _, c := range r.Failed() {
		if c.Fix == "" {
			t.Errorf("%s fails without a fix", c.Name)
		}
	}
	sum := r.Summary()
	if !strings.HasPrefix(sum, "host not ready: ram: ") || !strings.Contains(sum, "fix: ") {
		t.Errorf("summary %q", sum)
	}
}

func TestOldFirmwareAndDriverFail(t *testing.T) {
	s := pinnedSpec(t, "Llama-3.1-8B-Instruct", "n150")
	e := fakeEnv(t, "t3k-ready", "n150-old.json")
	e.Root = t.TempDir() // no sysfs version: the KMD comes from tt-smi's Driver
	r := Run(context.Background(), e, Need{Spec: s, Chips: []int{0}})
	got := statuses(r)
	if got["firmware"] != Fail || got["kmd"] != Fail {
		t.Errorf("firmware %s, kmd %s; want both to fail against %+v", got["firmware"], got["kmd"], s.SystemRequirements)
	}
	for _, c := range r.Checks {
		if c.Name == "kmd" && !strings.Contains(c.Detail, "tt-kmd 1.29") {
			t.Errorf("kmd detail %q does not name tt-smi's driver version", c.Detail)
		}
	}
}

func TestMixedFirmwareFails(t *testing.T) {
	r := Run(context.Background(), fakeEnv(t, "t3k-ready", "n300-mixed-fw.json"), Need{Chips: []int{0, 1}})
	for _, c := range r.Checks {
		if c.Name == "firmware" && (c.Status != Fail || !strings.Contains(c.Detail, "differ")) {
			t.Errorf("firmware: %+v", c)
		}
	}
}

func TestResetNeedsTTSMI(t *testing.T) {
	r := Run(context.Background(), fakeEnv(t, "t3k-ready", ""), Need{Chips: []int{0}, ResetDevice: true})
	if statuses(r)["tt-smi"] != Fail {
		t.Errorf("tt-smi check %s for a unit that resets chips", statuses(r)["tt-smi"])
	}
}

func TestMissingChipAndHugepages(t *testing.T) {
	r := Run(context.Background(), fakeEnv(t, "t3k-ready", "t3k.json"), Need{Chips: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}})
	got := statuses(r)
	if got["chips"] != Fail || got["hugepages"] != Fail {
		t.Errorf("chips %s hugepages %s with chip 8 missing and 8 hugepages for 9 chips", got["chips"], got["hugepages"])
	}
}

func TestWeightsDirSkipsDiskMinimum(t *testing.T) {
	s := spec(t, "Llama-3.1-70B-Instruct", "t3k")
	e := fakeEnv(t, "t3k-ready", "t3k.json")
	e.FreeBytes = func(string) (uint64, error) { return 0, nil }
	r := Run(context.Background(), e, Need{Spec: s, WeightsDir: t.TempDir()})
	if statuses(r)["disk"] != Pass {
		t.Errorf("disk = %s with pre-downloaded weights", statuses(r)["disk"])
	}
	r = Run(context.Background(), e, Need{Spec: s, WeightsDir: filepath.Join(t.TempDir(), "none")})
	if statuses(r)["disk"] != Fail {
		t.Errorf("disk = %s with a missing weights folder", statuses(r)["disk"])
	}
}

func TestDetectDevice(t *testing.T) {
	for file, want := range map[string]string{"t3k.json": "t3k", "n150-old.json": "n150", "p150x4.json": "p150x4"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tt-smi", file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.DetectDevice()
		if err != nil || d.Name != want {
			t.Errorf("%s: detected %q, %v; want %s", file, d.Name, err, want)
		}
	}
	s := &Snapshot{}
	if _, err := s.DetectDevice(); err == nil {
		t.Error("detected a device with no boards")
	}
}

func TestSatisfies(t *testing.T) {
	for _, tc := range []struct {
		v, spec string
		want    bool
	}{
		{"18.6.0.0", ">=18.6.0", true},
		{"18.5.9.0", ">=18.6.0", false},
		{"18.12.0.0", ">=18.8.0", true},
		{"2.5.0", ">=2.4.1", true},
		{"1.29", ">=2.1.0", false},
		{"2.5.0-rc1", ">=2.5.0", false},
		{"2.5.0", ">=2.1.0,<3", true},
		{"3.0.0", ">=2.1.0,<3", false},
		{"2.5.3", "~=2.5.0", true},
		{"2.6.0", "~=2.5.0", false},
		{"18.6.4", "==18.6.*", true},
		{"18.7.0", "!=18.7.*", false},
		{"v1.2", "==1.2.0", true},
	} {
		got, err := Satisfies(tc.v, tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("Satisfies(%q, %q) = %v, %v; want %v", tc.v, tc.spec, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"x", ">=1"}, {"1.0", "1.0"}, {"1.0", ">=1,"}, {"1.0", "~=1"}} {
		if _, err := Satisfies(bad[0], bad[1]); err == nil {
			t.Errorf("Satisfies(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	m, err := ParseMeminfo([]byte("MemTotal:  1024 kB\nHugePages_Total:   4\n"))
	if err != nil || m["MemTotal"] != 1024*1024 || m["HugePages_Total"] != 4 {
		t.Errorf("%v %v", m, err)
	}
	if _, err := ParseMeminfo([]byte("MemTotal: lots\n")); err == nil {
		t.Error("accepted a non-number")
	}
}

func FuzzSatisfies(f *testing.F) {
	f.Add("18.6.0.0", ">=18.6.0")
	f.Add("2.5.0rc1", "~=2.5,!=2.5.1,==2.*")
	f.Fuzz(func(t *testing.T, v, spec string) {
		_, _ = Satisfies(v, spec)
	})
}

func FuzzParseMeminfo(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "roots", "t3k-ready", "proc", "meminfo"))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseMeminfo(b) })
}

func FuzzParseSnapshot(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "tt-smi", "t3k.json"))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSnapshot(b)
		if err != nil {
			return
		}
		_ = s.KMDVersion()
		_ = s.FirmwareBundles()
		_, _ = s.DetectDevice()
	})
}

// TestKnownIssuesWarn: the catalog's known issues of the unit's spec are
// warnings with their text and link, and do not make the host not ready.
func TestKnownIssuesWarn(t *testing.T) {
	// Llama-3.1-8B-Instruct on p150 waives five evals (meta_ifeval, ...).
	s := spec(t, "Llama-3.1-8B-Instruct", "p150")
	if len(s.KnownIssues) != 5 {
		t.Fatalf("spec %s has %d known issues, want 5", s.ModelID, len(s.KnownIssues))
	}
	s.KnownIssues[0].Reason = "GH#2600 - IFEval score regressed on Blackhole"
	r := Run(context.Background(), fakeEnv(t, "t3k-ready", "t3k.json"), Need{Spec: s})
	var warned []Check
	for _, c := range r.Checks {
		if c.Name == "known-issue" {
			warned = append(warned, c)
		}
	}
	if len(warned) != 5 {
		t.Fatalf("%d known-issue checks, want 5: %+v", len(warned), r.Checks)
	}
	first := warned[0]
	if first.Status != Warn || !strings.Contains(first.Detail, "EVALS meta_ifeval is a known issue of "+s.ModelID) ||
		!strings.Contains(first.Detail, "GH#2600 - IFEval score regressed on Blackhole") ||
		!strings.Contains(first.Fix, "https://github.com/tenstorrent/tt-inference-server/issues/2600") {
		t.Errorf("first known issue: %+v", first)
	}
	if !strings.Contains(warned[1].Detail, "the catalog records no reason") || warned[1].Fix != "" {
		t.Errorf("known issue without a reason: %+v", warned[1])
	}
	for _, c := range r.Failed() {
		if c.Name == "known-issue" {
			t.Errorf("a known issue fails the host: %+v", c)
		}
	}
	// A spec without known issues adds no check.
	r = Run(context.Background(), fakeEnv(t, "t3k-ready", "t3k.json"), Need{Spec: spec(t, "Llama-3.1-70B-Instruct", "t3k")})
	if _, ok := statuses(r)["known-issue"]; ok {
		t.Errorf("known-issue check without known issues: %+v", r.Checks)
	}
}
