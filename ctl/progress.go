package ctl

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// progress shows a workflow's steps on stderr: a line per event, and on a
// terminal a bar with the step's count, elapsed time and ETA. It is the one
// display of bench, eval and release (bench/release.Progress, and
// evalsuite/runner.Progress through it).
type progress struct {
	w   io.Writer
	tty *os.File

	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// newProgress writes to the command's stderr; bars only on a terminal and
// without --no-progress.
func newProgress(c *cli.Context) *progress {
	p := &progress{w: safeWriter{c.App.ErrWriter}}
	if f, ok := c.App.ErrWriter.(*os.File); ok && !c.Bool("no-progress") && term.IsTerminal(int(f.Fd())) {
		p.tty = f
	}
	return p
}

// Logf prints a line about the run above the bar.
func (p *progress) Logf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", a...)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

// Step replaces the bar with one for a step of total units.
func (p *progress) Step(name string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	if p.tty == nil || total < 1 {
		return
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.tty),
		progressbar.OptionSetDescription(name),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
}

// Done counts n finished units of the current step.
func (p *progress) Done(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Finish removes the bar.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
}

func (p *progress) finishLocked() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
