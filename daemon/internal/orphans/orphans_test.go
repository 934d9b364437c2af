package orphans

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestReapStopsRecordedServer(t *testing.T) {
	r := Registry{Dir: filepath.Join(t.TempDir(), "servers")}
	cmd := startGroup(t)
	if err := r.Record("a", cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
	}()
	got, err := r.Reap(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Unit != "a" || got[0].PID != cmd.Process.Pid {
		t.Fatalf("reaped %+v", got)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("recorded server still running")
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "a.pid")); !os.IsNotExist(err) {
		t.Fatalf("record left behind: %v", err)
	}
}

func TestReapSkipsRecycledAndBadRecords(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	cmd := startGroup(t)
	// Same pid, other start time: a recycled pid, not our server.
	if err := os.WriteFile(filepath.Join(r.Dir, "old.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+" 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "junk.pid"), []byte("not a record"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := r.Reap(time.Second)
	if err != nil || len(got) != 0 {
		t.Fatalf("reaped %+v, %v", got, err)
	}
	if !running(cmd.Process.Pid) {
		t.Fatal("a process with a recycled pid was killed")
	}
	if got, err := (Registry{Dir: filepath.Join(r.Dir, "none")}).Reap(time.Second); err != nil || got != nil {
		t.Fatalf("missing folder: %+v %v", got, err)
	}
}

func TestForgetOnlyItsOwnPid(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	if err := r.Record("a", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	r.Forget("a", os.Getpid()+1)
	if _, err := os.Stat(filepath.Join(r.Dir, "a.pid")); err != nil {
		t.Fatal("Forget with another pid removed the record")
	}
	r.Forget("a", os.Getpid())
	if _, err := os.Stat(filepath.Join(r.Dir, "a.pid")); !os.IsNotExist(err) {
		t.Fatal("record not forgotten")
	}
}
