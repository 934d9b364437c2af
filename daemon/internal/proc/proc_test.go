package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestStartTimeAndRunning(t *testing.T) {
	st, err := StartTime(os.Getpid())
	if err != nil || st == 0 {
		t.Fatalf("StartTime(self) = %d, %v", st, err)
	}
	if !Running(os.Getpid()) {
		t.Fatal("this process is not running")
	}
	if Running(1 << 30) {
		t.Fatal("no process is running")
	}
}

// A process the test starts and then treats as a stranger: Wait returns
// once it is gone, without being its reaper.
func TestOpenWaitSignal(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	reaped := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(reaped)
	}()
	st, err := StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cmd.Process.Pid, st+1); !errors.Is(err, ErrGone) {
		t.Fatalf("Open with the wrong start time = %v, want ErrGone", err)
	}
	h, err := Open(cmd.Process.Pid, st)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// A second handle without its pidfd takes the /proc polling path of
	// kernels without pidfd.
	polled, err := Open(cmd.Process.Pid, st)
	if err != nil {
		t.Fatal(err)
	}
	polled.Close()
	polled.poll = time.Millisecond
	waited := make(chan struct{})
	go func() {
		h.Wait()
		polled.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned while the process runs")
	default:
	}
	if err := h.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the process exited")
	}
	<-reaped
	if err := h.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal to an exited process: %v", err)
	}
}
