package device

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// IDsPlaceholder in a reset command is replaced by the comma-joined chip
// ids ("0,1").
const IDsPlaceholder = "<ids>"

// defaultResetCommand resets the given chips with tt-smi.
var defaultResetCommand = []string{"tt-smi", "-r", IDsPlaceholder}

// DefaultResetCommand returns the reset command template used when none is
// configured: tt-smi -r <ids>.
func DefaultResetCommand() []string { return append([]string(nil), defaultResetCommand...) }

// DefaultResetTimeout bounds one reset; tt-smi takes seconds per board.
const DefaultResetTimeout = 2 * time.Minute

// Runner runs a command to completion and returns its combined output. It
// is the edge tests and dry runs replace.
type Runner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// ExecRunner runs commands as child processes in their own process group,
// killing the whole group when ctx ends.
type ExecRunner struct{}

// Run starts argv and waits for it.
func (ExecRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild that keeps the output pipe open must not keep us waiting.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return out.Bytes(), err
}

// Resetter resets chips by running a command template.
type Resetter struct {
	// Command is the template; every IDsPlaceholder in its arguments is
	// replaced by the chip ids. Empty means DefaultResetCommand.
	Command []string
	// Timeout bounds one reset; 0 means DefaultResetTimeout.
	Timeout time.Duration
	// Runner runs the command; nil means ExecRunner.
	Runner Runner
}

// Argv returns the command that resets chips.
func (r *Resetter) Argv(chips []int) []string {
	tmpl := r.Command
	if len(tmpl) == 0 {
		tmpl = defaultResetCommand
	}
	ids := make([]string, len(chips))
	for i, c := range chips {
		ids[i] = strconv.Itoa(c)
	}
	joined := strings.Join(ids, ",")
	argv := make([]string, len(tmpl))
	for i, a := range tmpl {
		argv[i] = strings.ReplaceAll(a, IDsPlaceholder, joined)
	}
	return argv
}

// Reset runs the reset command for chips and waits for it, up to the
// timeout. The error includes the command's output, which is where tt-smi
// explains a failure.
func (r *Resetter) Reset(ctx context.Context, chips []int) error {
	if len(chips) == 0 {
		return nil
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultResetTimeout
	}
	runner := r.Runner
	if runner == nil {
		runner = ExecRunner{}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := r.Argv(chips)
	out, err := runner.Run(ctx, argv)
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	msg := strings.TrimSpace(string(out))
	if len(msg) > 2000 {
		msg = msg[len(msg)-2000:]
	}
	if msg != "" {
		return fmt.Errorf("reset chips %v with %q: %w: %s", chips, strings.Join(argv, " "), err, msg)
	}
	return fmt.Errorf("reset chips %v with %q: %w", chips, strings.Join(argv, " "), err)
}
