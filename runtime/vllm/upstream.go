package vllm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// Upstream is a running upstream server process, in its own process group
// so that stopping it takes every child it spawned (docker client, python
// workers) with it.
type Upstream struct {
	addr string
	cmd  *exec.Cmd
	log  *slog.Logger

	// lastActivity is the unix-nano time of the last output line: a server
	// that prints nothing and does not become healthy is stalled.
	lastActivity atomic.Int64

	done    chan struct{}
	waitErr error

	mu   sync.Mutex
	tail []string // last output lines, for error messages
}

const tailLines = 20

// Start runs l's command. Output lines go to log with stream=stdout|stderr.
// The process is not tied to ctx: call Stop.
func Start(l *Launch, log *slog.Logger) (*Upstream, error) {
	if len(l.Argv) == 0 {
		return nil, errors.New("start upstream: empty command")
	}
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.Env = append(os.Environ(), l.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start upstream %s: %w", l.Argv[0], err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start upstream %s: %w", l.Argv[0], err)
	}
	u := &Upstream{addr: l.Addr, cmd: cmd, log: log, done: make(chan struct{})}
	u.lastActivity.Store(time.Now().UnixNano())
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start upstream %s: %w", l.Argv[0], err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go u.pump(&readers, stdout, "stdout")
	go u.pump(&readers, stderr, "stderr")
	go func() {
		// Wait must follow the readers: it closes the pipes.
		readers.Wait()
		u.waitErr = cmd.Wait()
		close(u.done)
	}()
	return u, nil
}

func (u *Upstream) pump(wg *sync.WaitGroup, r io.Reader, stream string) {
	defer wg.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		u.lastActivity.Store(time.Now().UnixNano())
		u.mu.Lock()
		u.tail = append(u.tail, line)
		if len(u.tail) > tailLines {
			u.tail = u.tail[len(u.tail)-tailLines:]
		}
		u.mu.Unlock()
		u.log.Info(line, "stream", stream)
	}
}

// Pid is the upstream process id.
func (u *Upstream) Pid() int { return u.cmd.Process.Pid }

// Done is closed when the process has exited.
func (u *Upstream) Done() <-chan struct{} { return u.done }

// Err describes how the process exited, with its last output lines. It is
// meaningful after Done is closed.
func (u *Upstream) Err() error {
	u.mu.Lock()
	tail := strings.Join(u.tail, "\n")
	u.mu.Unlock()
	err := u.waitErr
	if err == nil {
		err = errors.New("exited with status 0")
	}
	if tail != "" {
		return fmt.Errorf("upstream server %w; last output:\n%s", err, tail)
	}
	return fmt.Errorf("upstream server %w", err)
}

// WaitReady polls the upstream's GET /health every poll until it answers
// 200. It fails when the process exits, when ctx ends, or when the server
// has neither printed anything nor become healthy for stall.
func (u *Upstream) WaitReady(ctx context.Context, stall, poll time.Duration) error {
	client := &http.Client{Timeout: poll}
	base := "http://" + u.addr
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if a, err := runtime.ProbeHealth(ctx, client, base, nil); err == nil && a.Ready() {
			return nil
		}
		if idle := time.Since(time.Unix(0, u.lastActivity.Load())); idle > stall {
			return fmt.Errorf("upstream server stalled: not healthy and no output for %s", idle.Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for upstream server: %w", ctx.Err())
		case <-u.done:
			return u.Err()
		case <-t.C:
		}
	}
}

// Stop sends SIGTERM to the process group and SIGKILL after timeout, then
// waits for the process to exit.
func (u *Upstream) Stop(timeout time.Duration) {
	pgid := -u.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-u.done:
	case <-time.After(timeout):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-u.done
	}
}
