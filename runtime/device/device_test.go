package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"3", "0", "10", "1", "udev", "007", "-1", "2a"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	chips, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, c := range chips {
		ids = append(ids, c.ID)
		if c.Path != filepath.Join(root, fmt.Sprint(c.ID)) {
			t.Errorf("chip %d path %s", c.ID, c.Path)
		}
	}
	if !reflect.DeepEqual(ids, []int{0, 1, 3, 10}) {
		t.Errorf("ids %v", ids)
	}
	if got := Missing(chips, []int{1, 2, 10, 4}); !reflect.DeepEqual(got, []int{2, 4}) {
		t.Errorf("missing %v", got)
	}
}

func TestDiscoverNoDriver(t *testing.T) {
	chips, err := Discover(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(chips) != 0 {
		t.Errorf("got %v, %v", chips, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(file); err == nil {
		t.Error("a file as root should be an error")
	}
}

func TestClaims(t *testing.T) {
	c := NewClaims()
	if err := c.Claim("a", []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	err := c.Claim("b", []int{2, 1})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Chip != 1 || ce.Holder != "a" || ce.Unit != "b" {
		t.Fatalf("conflict: %v", err)
	}
	if !strings.Contains(err.Error(), "chip 1 already claimed by unit a") {
		t.Errorf("message %q", err)
	}
	// All or nothing: chip 2 was not taken by the failed claim.
	if _, held := c.Holder(2); held {
		t.Error("failed claim left chip 2 held")
	}
	// Re-claiming replaces the unit's chips.
	if err := c.Claim("a", []int{1, 3}); err != nil {
		t.Fatal(err)
	}
	if got := c.Chips("a"); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Errorf("a holds %v", got)
	}
	if err := c.Claim("b", []int{0, 2}); err != nil {
		t.Fatal(err)
	}
	want := []Holding{{0, "b"}, {1, "a"}, {2, "b"}, {3, "a"}}
	if got := c.Holders(); !reflect.DeepEqual(got, want) {
		t.Errorf("holders %v", got)
	}
	c.Release("a")
	if got := c.Holders(); !reflect.DeepEqual(got, []Holding{{0, "b"}, {2, "b"}}) {
		t.Errorf("after release %v", got)
	}
	for _, bad := range [][]int{{-1}, {4, 4}} {
		if err := c.Claim("c", bad); err == nil {
			t.Errorf("claim %v accepted", bad)
		}
	}
	if err := c.Claim("", []int{9}); err == nil {
		t.Error("empty unit accepted")
	}
}

func TestClaimsConcurrent(t *testing.T) {
	c := NewClaims()
	var wg sync.WaitGroup
	wins := make([]bool, 16)
	for i := range wins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wins[i] = c.Claim(fmt.Sprintf("u%d", i), []int{7}) == nil
			_ = c.Holders()
		}()
	}
	wg.Wait()
	n := 0
	for _, w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d units won chip 7", n)
	}
}

func TestResetArgv(t *testing.T) {
	r := &Resetter{}
	if got := r.Argv([]int{0, 1}); !reflect.DeepEqual(got, []string{"tt-smi", "-r", "0,1"}) {
		t.Errorf("default argv %v", got)
	}
	r.Command = []string{"reset", "--chips=<ids>", "--all"}
	if got := r.Argv([]int{4}); !reflect.DeepEqual(got, []string{"reset", "--chips=4", "--all"}) {
		t.Errorf("argv %v", got)
	}
}

// TestResetRunsCommand runs a real shell as the reset command.
func TestResetRunsCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "args")
	r := &Resetter{Command: []string{"sh", "-c", `echo "$0" "$@" > "` + out + `"`, "tt-smi", "-r", IDsPlaceholder}}
	if err := r.Reset(context.Background(), []int{2, 3}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "tt-smi -r 2,3" {
		t.Errorf("command saw %q", got)
	}
	if err := r.Reset(context.Background(), nil); err != nil {
		t.Errorf("no chips: %v", err)
	}
}

func TestResetFailure(t *testing.T) {
	r := &Resetter{Command: []string{"sh", "-c", "echo board 0 did not come back >&2; exit 3", IDsPlaceholder}}
	err := r.Reset(context.Background(), []int{0})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "board 0 did not come back") {
		t.Errorf("got %v", err)
	}
}

func TestResetTimeout(t *testing.T) {
	// The shell's child keeps the output pipe open: the process group kill
	// must still end the reset promptly.
	r := &Resetter{Command: []string{"sh", "-c", "sleep 30 & sleep 30", IDsPlaceholder}, Timeout: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- r.Reset(context.Background(), []int{0}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
			t.Errorf("got %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reset did not stop at its timeout")
	}
}

// recordingRunner is a Runner that records what it was asked to run.
type recordingRunner struct{ argv []string }

func (r *recordingRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	r.argv = argv
	return nil, nil
}

func TestResetUsesRunner(t *testing.T) {
	rr := &recordingRunner{}
	r := &Resetter{Runner: rr}
	if err := r.Reset(context.Background(), []int{5, 6}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rr.argv, []string{"tt-smi", "-r", "5,6"}) {
		t.Errorf("runner got %v", rr.argv)
	}
}
