// Package sandbox runs untrusted generated programs (the code tasks'
// completions with their tests) in a separate process that cannot harm
// the host: a wall-clock time limit that kills the whole process tree,
// resource limits (address space, CPU seconds, file size, open files,
// processes, no core dumps) set before the program's first line runs, a
// private temporary directory as working directory and HOME that is
// removed afterwards, a clean environment (no inherited variables, so no
// secrets), and, where the kernel permits, new network, PID, IPC and UTS
// namespaces: the program sees no network interface but a down loopback,
// and every process it starts dies with it. When the host refuses the
// namespaces (no privilege for unprivileged user namespaces), the program
// still runs with the limits, and Result.Isolation says that the network
// was not isolated.
//
// A program passes when it runs to its end (lm-eval's code_eval: the
// check program is exec'd and passes unless it raises; SystemExit counts
// as a failure there, and here a program that leaves early, even with
// status 0, does not reach the end marker and fails).
package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits bound one run.
type Limits struct {
	// Timeout is the wall-clock limit (lm-eval's code_eval uses 3 s).
	Timeout time.Duration
	// MemoryBytes bounds the address space (RLIMIT_AS).
	MemoryBytes uint64
	// FileBytes bounds any file written (RLIMIT_FSIZE).
	FileBytes uint64
	// OpenFiles bounds open descriptors (RLIMIT_NOFILE).
	OpenFiles uint64
	// Processes bounds the processes the program may start.
	Processes uint64
	// OutputBytes bounds the stdout and stderr kept.
	OutputBytes int
}

// DefaultLimits are code_eval's time limit with limits that let test
// programs run and stop runaway ones.
func DefaultLimits() Limits {
	return Limits{Timeout: 3 * time.Second, MemoryBytes: 1 << 30, FileBytes: 16 << 20, OpenFiles: 64, Processes: 16, OutputBytes: 64 << 10}
}

// Status is how a run ended.
type Status string

// The statuses; only Passed counts for pass@k.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Timeout Status = "timed out"
)

// Result is one run's outcome.
type Result struct {
	Status Status
	// ExitCode is the interpreter's exit status (-1 when killed).
	ExitCode int
	// Output is the head of stdout and stderr together.
	Output string
	// Isolation says which namespaces the run had ("net,pid,ipc,uts",
	// "none: <why>").
	Isolation string
	Elapsed   time.Duration
}

// ErrNoPython says that no Python interpreter was found.
var ErrNoPython = errors.New("no python3 on PATH: the code tasks run the generated programs with the host's Python 3; install python3 (Debian: apt-get install python3)")

// FindPython returns the host's first python3 on PATH.
func FindPython() (string, error) {
	c := pythonCandidates()
	if len(c) == 0 {
		return "", ErrNoPython
	}
	return c[0], nil
}

// pythonCandidates lists every Python 3 interpreter on PATH, in PATH order.
func pythonCandidates() []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		for _, name := range []string{"python3", "python"} {
			p := filepath.Join(dir, name)
			real, err := filepath.EvalSymlinks(p)
			if err != nil || seen[real] {
				continue
			}
			if st, err := os.Stat(real); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				continue
			}
			v, err := exec.Command(p, "-c", "import sys; print(sys.version_info[0])").Output()
			if err != nil || strings.TrimSpace(string(v)) != "3" {
				continue
			}
			seen[real] = true
			out = append(out, p)
		}
	}
	return out
}

// prologue sets the limits (soft and hard, so the program cannot raise
// them again), then runs program.py as __main__ and, if it gets to the
// end, writes the run's nonce to fd 3.
const prologue = `import resource, os, sys
def _lim(r, v):
    resource.setrlimit(r, (v, v))
_lim(resource.RLIMIT_AS, %d)
_lim(resource.RLIMIT_CPU, %d)
_lim(resource.RLIMIT_FSIZE, %d)
_lim(resource.RLIMIT_NOFILE, %d)
_lim(resource.RLIMIT_NPROC, %d)
_lim(resource.RLIMIT_CORE, 0)
_done = os.fdopen(3, "w")
_nonce = os.environ.pop("SANDBOX_NONCE")
_src = open("program.py", encoding="utf-8").read()
_g = {"__name__": "__main__", "__file__": "program.py"}
try:
    exec(compile(_src, "program.py", "exec"), _g)
except BaseException as _e:
    import traceback
    traceback.print_exc()
    sys.exit(1)
_done.write(_nonce)
_done.close()
`

// Runner runs programs with one interpreter and one set of limits.
type Runner struct {
	Python string
	Limits Limits

	once      sync.Once
	nsOK      bool
	nsWhy     string
	nproc0    uint64
	asNobody  bool
	nobodyUID int
}

// New finds python3 and returns a Runner with lim.
func New(lim Limits) (*Runner, error) {
	py, err := FindPython()
	if err != nil {
		return nil, err
	}
	return &Runner{Python: py, Limits: lim}, nil
}

// Run runs program (Python source) and reports whether it ran to its end.
// An error means the sandbox itself failed (no temp dir, no interpreter),
// not the program.
func (r *Runner) Run(ctx context.Context, program string) (Result, error) {
	return r.RunWith(ctx, program, nil)
}

// RunWith is Run with data files beside program.py in the private
// directory (a grader's test data, read by the program), each named by a
// plain file name.
func (r *Runner) RunWith(ctx context.Context, program string, files map[string][]byte) (Result, error) {
	for name := range files {
		if name == "program.py" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return Result{}, fmt.Errorf("sandbox: data file name %q: want a plain file name other than program.py", name)
		}
	}
	lim := r.Limits
	if lim.Timeout <= 0 {
		lim = DefaultLimits()
	}
	dir, err := os.MkdirTemp("", "ttis-sandbox-*")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "program.py"), []byte(program), 0o644); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w", err)
		}
	}
	r.once.Do(r.probe)
	nonceRaw := make([]byte, 16)
	if _, err := rand.Read(nonceRaw); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	nonce := hex.EncodeToString(nonceRaw)
	cpu := uint64(lim.Timeout/time.Second) + 1
	// RLIMIT_NPROC counts every process of the user: the program may add
	// lim.Processes to what the user already runs.
	nproc := lim.Processes
	if !r.asNobody {
		nproc += countProcesses(os.Getuid())
	} else {
		nproc += r.nproc0
	}
	src := fmt.Sprintf(prologue, lim.MemoryBytes, cpu, lim.FileBytes, lim.OpenFiles, nproc)
	run := func(cloneflags uintptr) (Result, error) {
		return r.exec(ctx, dir, src, nonce, lim, cloneflags)
	}
	if r.nsOK {
		res, err := run(syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | r.userNS())
		res.Isolation = "net,pid,ipc,uts"
		return res, err
	}
	res, err := run(0)
	res.Isolation = "none: " + r.nsWhy
	return res, err
}

func (r *Runner) userNS() uintptr {
	if os.Getuid() == 0 {
		return 0
	}
	return syscall.CLONE_NEWUSER
}

// probe decides once whether namespaces can be made, and, for root,
// whether the program can run as nobody (so that RLIMIT_NPROC applies:
// the kernel does not enforce it for root).
func (r *Runner) probe() {
	if os.Getuid() == 0 {
		// nobody must be able to run the interpreter: one under /root
		// may not be; take the first on PATH that works.
		r.asNobody, r.nobodyUID = true, 65534
		found := false
		for _, py := range append([]string{r.Python}, pythonCandidates()...) {
			cmd := exec.Command(py, "-I", "-S", "-c", "pass")
			cmd.Dir, cmd.Env = "/", []string{}
			cmd.SysProcAttr = &syscall.SysProcAttr{}
			r.applyIdentity(cmd.SysProcAttr)
			if cmd.Run() == nil {
				r.Python, found = py, true
				break
			}
		}
		if !found {
			r.asNobody = false
			r.nsWhy = "no interpreter on PATH runs as nobody, so the process limit is not enforced for root"
		}
		r.nproc0 = countProcesses(r.nobodyUID)
	}
	cmd := exec.Command(r.Python, "-c", "pass")
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | r.userNS()}
	r.applyIdentity(cmd.SysProcAttr)
	if err := cmd.Run(); err != nil {
		r.nsWhy = strings.TrimPrefix(r.nsWhy+"; ", "; ") + fmt.Sprintf("the kernel refused new namespaces (%v): the program could reach the network", err)
		return
	}
	r.nsOK = true
}

func (r *Runner) applyIdentity(a *syscall.SysProcAttr) {
	if r.asNobody {
		a.Credential = &syscall.Credential{Uid: uint32(r.nobodyUID), Gid: uint32(r.nobodyUID), NoSetGroups: true}
		return
	}
	if a.Cloneflags&syscall.CLONE_NEWUSER != 0 {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
}

func (r *Runner) exec(ctx context.Context, dir, src, nonce string, lim Limits, cloneflags uintptr) (Result, error) {
	if r.asNobody {
		if err := os.Chown(dir, r.nobodyUID, r.nobodyUID); err != nil {
			return Result{}, fmt.Errorf("sandbox: give the temp dir to nobody: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer doneR.Close()
	cmd := exec.Command(r.Python, "-I", "-S", "-B", "-c", src)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0", "SANDBOX_NONCE=" + nonce}
	out := &limitedBuffer{max: lim.OutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{doneW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: cloneflags, Pdeathsig: syscall.SIGKILL}
	r.applyIdentity(cmd.SysProcAttr)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		doneW.Close()
		return Result{}, fmt.Errorf("sandbox: start %s: %w", r.Python, err)
	}
	doneW.Close()
	var marker []byte
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 64)
		n, _ := doneR.Read(buf)
		marker = buf[:n]
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(lim.Timeout)
	defer timer.Stop()
	status := Status("")
	var werr error
	select {
	case werr = <-waited:
	case <-timer.C:
		status = Timeout
	case <-ctx.Done():
		status = Timeout
	}
	if status == Timeout {
		// The program's process group (and, in a PID namespace, every
		// process it started) goes with its first process.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		werr = <-waited
	}
	// Strays that left the process group outside a PID namespace: the
	// group kill above is all that can be done without one.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-readDone
	res := Result{Output: out.String(), Elapsed: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case status == Timeout:
		res.Status = Timeout
	case werr == nil && bytes.Equal(marker, []byte(nonce)):
		res.Status = Passed
	default:
		res.Status = Failed
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// countProcesses counts the processes of uid (from /proc).
func countProcesses(uid int) uint64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var n uint64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		info, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

// limitedBuffer keeps the first max bytes written.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
