package orphans

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/internal/proc"
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

func unitFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecordServersStop(t *testing.T) {
	r := Registry{Dir: filepath.Join(t.TempDir(), "servers")}
	cmd := startGroup(t)
	if err := r.Record("a", cmd.Process.Pid, "127.0.0.1:1", unitFile(t, "model = \"m\"\n")); err != nil {
		t.Fatal(err)
	}
	got, err := r.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Unit != "a" || got[0].PID != cmd.Process.Pid || got[0].Text != "model = \"m\"\n" ||
		got[0].Listen != "127.0.0.1:1" || len(got[0].Hash) != 64 {
		t.Fatalf("servers %+v", got)
	}
	exited := make(chan struct{})
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
	}()
	r.Stop(got, 5*time.Second)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("recorded server still running")
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "a.json")); !os.IsNotExist(err) {
		t.Fatalf("record left behind: %v", err)
	}
}

func TestServersSkipRecycledAndBadRecords(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	cmd := startGroup(t)
	pid := strconv.Itoa(cmd.Process.Pid)
	// Same pid, other start time: a recycled pid, not our server.
	for name, text := range map[string]string{
		"old.pid":     pid + " 1\n",
		"junk.pid":    "not a record",
		"junk.json":   "{",
		"recycled.js": "ignored",
		"other.json":  `{"pid":` + pid + `,"start_time":1}`,
	} {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Servers()
	if err != nil || len(got) != 0 {
		t.Fatalf("servers %+v, %v", got, err)
	}
	if !proc.Running(cmd.Process.Pid) {
		t.Fatal("a process with a recycled pid was killed")
	}
	if got, err := (Registry{Dir: filepath.Join(r.Dir, "none")}).Servers(); err != nil || got != nil {
		t.Fatalf("missing folder: %+v %v", got, err)
	}
	// A legacy record of a live server is returned, to be stopped.
	st, _ := proc.StartTime(cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(r.Dir, "legacy.pid"), []byte(pid+" "+strconv.FormatUint(st, 10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Servers(); err != nil || len(got) != 1 || got[0].Unit != "legacy" || got[0].Hash != "" {
		t.Fatalf("legacy record: %+v %v", got, err)
	}
}

func TestForgetOnlyItsOwnPid(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	f := unitFile(t, "x")
	if err := r.Record("a", os.Getpid(), "127.0.0.1:1", f); err != nil {
		t.Fatal(err)
	}
	r.Forget("a", os.Getpid()+1)
	if _, err := os.Stat(filepath.Join(r.Dir, "a.json")); err != nil {
		t.Fatal("Forget with another pid removed the record")
	}
	r.Forget("a", os.Getpid())
	if _, err := os.Stat(filepath.Join(r.Dir, "a.json")); !os.IsNotExist(err) {
		t.Fatal("record not forgotten")
	}
}

// Whatever an earlier ttisd (or a disk error) left in a record, reading
// the records never panics and never returns a server that is not running.
func FuzzRecords(f *testing.F) {
	f.Add([]byte(`{"pid":1234,"start_time":5,"listen":"127.0.0.1:1","unit_hash":"ab","unit_text":"x"}`), false)
	f.Add([]byte("1234 5\n"), true)
	f.Add([]byte("{"), false)
	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		dir := t.TempDir()
		name := "a.json"
		if legacy {
			name = "a.pid"
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Registry{Dir: dir}.Servers()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range got {
			if !alive(s) {
				t.Fatalf("returned a server that is not running: %+v", s)
			}
		}
	})
}

// A named pipe, a device node or a file over its bound among the records
// (the state folder is writable by others than the daemon) is dropped
// without being opened or read whole, beside a good record; a pipe in
// place of the unit text a server runs is refused, not waited on.
func TestServersSkipHostileRecords(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	cmd := startGroup(t)
	if err := r.Record("good", cmd.Process.Pid, "127.0.0.1:1", unitFile(t, "model = \"m\"\n")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pipe.json", "pipe.pid"} {
		if err := syscall.Mkfifo(filepath.Join(r.Dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(r.Dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(r.Dir, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(400 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	done := make(chan struct{})
	var got []Server
	go func() {
		defer close(done)
		got, err = r.Servers()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Servers blocked on a hostile record for 30s")
	}
	if err != nil || len(got) != 1 || got[0].Unit != "good" {
		t.Fatalf("servers %+v, %v", got, err)
	}
	left, _ := os.ReadDir(r.Dir)
	if len(left) != 1 || left[0].Name() != "good.json" {
		t.Errorf("records left: %v", left)
	}
	pipe := filepath.Join(t.TempDir(), "unit.toml")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Record("p", cmd.Process.Pid, "127.0.0.1:1", pipe); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
		t.Errorf("record of a server whose unit text is a pipe: %v", err)
	}
}
