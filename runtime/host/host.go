// Package host checks that this machine can run a unit on Tenstorrent
// hardware before it starts: memory and disk against the catalog's minimums,
// 1 GiB hugepages, the unit's chips, the tt-kmd driver and firmware bundle
// versions against the catalog's pins, docker and tt-smi. These are the
// checks tt-inference-server runs in setup_host.py (check_ram, lines 364-386;
// check_disk_space, lines 341-362) and run_system_software_validation.py
// (firmware and KMD, lines 164-326), plus the ones its install guide leaves
// to the user (hugepages, /dev/tenstorrent).
//
// Every path is read under Env.Root, so tests use fake sysfs, proc and dev
// trees, and tt-smi's snapshot comes from a function, so tests use recorded
// snapshots.
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/units/catalog"
)

// Status is a check's outcome.
type Status string

// Outcomes, from best to worst.
const (
	Pass Status = "pass"
	Skip Status = "skip"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one readiness check.
type Check struct {
	// Name is short and stable ("ram", "hugepages", "kmd", ...).
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail says what was found, with the required value.
	Detail string `json:"detail"`
	// Fix says how to make the check pass (empty when it passes).
	Fix string `json:"fix,omitempty"`
}

// Report is the outcome of every check.
type Report struct {
	Checks []Check `json:"checks"`
	// Ready is false when any check failed.
	Ready bool `json:"ready"`
}

// Failed lists the failed checks.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// Summary is one line naming the failed checks and their fixes, for a
// unit's status.
func (r Report) Summary() string {
	var parts []string
	for _, c := range r.Failed() {
		s := c.Name + ": " + c.Detail
		if c.Fix != "" {
			s += " (fix: " + c.Fix + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "host ready"
	}
	return "host not ready: " + strings.Join(parts, "; ")
}

// Env is where the checks look.
type Env struct {
	// Root prefixes /proc, /sys and /dev ("" means "/").
	Root string
	// TTSMI returns `tt-smi -s` output; nil runs tt-smi from PATH.
	TTSMI func(ctx context.Context) ([]byte, error)
	// LookPath finds executables; nil is exec.LookPath.
	LookPath func(string) (string, error)
	// Docker reports whether the docker daemon answers; nil runs
	// `docker version`.
	Docker func(ctx context.Context) error
	// FreeBytes returns the free space of path's filesystem; nil uses statfs.
	FreeBytes func(path string) (uint64, error)
}

// Need is what a unit asks of the host.
type Need struct {
	// Spec is the unit's catalog entry (minimums and pins); nil checks
	// only what every Tenstorrent unit needs.
	Spec *catalog.Spec
	// Chips are the unit's /dev/tenstorrent ids.
	Chips []int
	// WeightsCache is the folder the weights and tensor cache go to; its
	// filesystem must have the catalog's disk minimum free.
	WeightsCache string
	// WeightsDir is a folder of pre-downloaded weights (no download, so no
	// disk minimum, as setup_host.py line 344 skips it).
	WeightsDir string
	// Docker is set when the unit runs a container.
	Docker bool
	// ResetDevice is set when the unit resets chips with tt-smi.
	ResetDevice bool
	// HFToken is set when the unit hands the container a Hugging Face
	// token ([vllm] hf_token_file).
	HFToken bool
}

// DefaultDockerRoot is where docker keeps named volumes (the tensor cache
// of a unit without [vllm] cache_dir).
const DefaultDockerRoot = "/var/lib/docker"

// Run performs every check of need on env.
func Run(ctx context.Context, env Env, need Need) Report {
	env = env.withDefaults()
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }
	add(checkRAM(env, need))
	add(checkDisk(env, need))
	add(checkHugepages(env, need))
	add(checkChips(env, need))
	snap, snapErr := env.snapshot(ctx)
	add(checkTTSMI(env, need, snapErr))
	add(checkKMD(env, need, snap))
	add(checkFirmware(need, snap, snapErr))
	add(checkDocker(ctx, env, need))
	add(checkWeightsSource(need))
	for _, c := range checkKnownIssues(need) {
		add(c)
	}
	r.Ready = len(r.Failed()) == 0
	return r
}

func (e Env) withDefaults() Env {
	if e.Root == "" {
		e.Root = "/"
	}
	if e.LookPath == nil {
		e.LookPath = exec.LookPath
	}
	if e.TTSMI == nil {
		lookPath := e.LookPath
		e.TTSMI = func(ctx context.Context) ([]byte, error) { return runTTSMI(ctx, lookPath) }
	}
	if e.Docker == nil {
		e.Docker = dockerVersion
	}
	if e.FreeBytes == nil {
		e.FreeBytes = statfsFree
	}
	return e
}

// path joins an absolute host path under Root.
func (e Env) path(p string) string { return filepath.Join(e.Root, p) }

// errNoTTSMI marks a host without tt-smi.
var errNoTTSMI = errors.New("tt-smi is not installed")

// runTTSMI runs `tt-smi -s` as run_system_software_validation.py does
// (lines 36-88), with a bound on its time.
func runTTSMI(ctx context.Context, lookPath func(string) (string, error)) ([]byte, error) {
	bin, err := lookPath("tt-smi")
	if err != nil {
		return nil, errNoTTSMI
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-s", "--snapshot_no_tty").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, fmt.Errorf("tt-smi -s: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("tt-smi -s: %w", err)
	}
	return out, nil
}

func (e Env) snapshot(ctx context.Context) (*Snapshot, error) {
	b, err := e.TTSMI(ctx)
	if err != nil {
		return nil, err
	}
	return ParseSnapshot(b)
}

func dockerVersion(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	return nil
}

func statfsFree(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// existingParent is path or its nearest existing ancestor: the filesystem
// a folder will be created on.
func existingParent(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
	}
}
