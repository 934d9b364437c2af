package ctl

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// progress shows a workflow's steps on stderr: a line per event, and on a
// terminal a bar with the step's count, elapsed time and ETA. Elsewhere (a
// CI log, a pipe) the bar would be noise, so each step gets plain lines
// instead: one when it ends, with its count and time, and one at least
// every lineEvery while it runs, with its count and ETA, so a long sweep
// point never leaves a log silent. It is the one display of bench, eval and
// release (bench/release.Progress, and evalsuite/runner.Progress through
// it).
type progress struct {
	w   io.Writer
	tty *os.File
	// lines: plain progress lines (not a terminal, progress wanted).
	lines bool
	// every is the longest a running step stays silent; now the clock.
	every time.Duration
	now   func() time.Time

	mu  sync.Mutex
	bar *progressbar.ProgressBar
	// The running step, for plain lines.
	step        string
	total, done int
	started     time.Time
	lastLine    time.Time
	ended       bool
	stop        chan struct{}
}

// lineEvery is how long a running step may go without a progress line.
const lineEvery = 15 * time.Second

// newProgress writes to the command's stderr; bars only on a terminal,
// plain lines elsewhere, neither with --no-progress.
func newProgress(c *cli.Context) *progress {
	p := &progress{w: safeWriter{c.App.ErrWriter}, every: lineEvery, now: time.Now}
	if c.Bool("no-progress") {
		return p
	}
	if f, ok := c.App.ErrWriter.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = f
	} else {
		p.lines = true
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
	if total < 1 {
		return
	}
	if p.lines {
		now := p.now()
		p.step, p.total, p.done, p.started, p.lastLine, p.ended = name, total, 0, now, now, false
		p.stop = make(chan struct{})
		go p.tick(p.stop)
		return
	}
	if p.tty == nil {
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
	if p.step == "" || p.ended {
		return
	}
	p.done += n
	switch {
	case p.done >= p.total:
		p.endLocked()
	case p.now().Sub(p.lastLine) >= p.every:
		p.lineLocked()
	}
}

// tick prints the running step's line when it has been silent for every,
// however long a single unit takes.
func (p *progress) tick(stop <-chan struct{}) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.ended && p.now().Sub(p.lastLine) >= p.every {
				p.lineLocked()
			}
			p.mu.Unlock()
		}
	}
}

// lineLocked prints the running step's count, elapsed time and ETA.
func (p *progress) lineLocked() {
	now := p.now()
	elapsed := now.Sub(p.started)
	eta := "ETA unknown"
	if p.done > 0 {
		eta = "ETA " + roundDuration(time.Duration(float64(elapsed)*float64(p.total-p.done)/float64(p.done)))
	}
	fmt.Fprintf(p.w, "%s: %d/%d (%d%%), %s elapsed, %s\n", p.step, p.done, p.total, 100*p.done/p.total, roundDuration(elapsed), eta)
	p.lastLine = now
}

// endLocked prints the step's last line: what finished, in how long.
func (p *progress) endLocked() {
	p.ended = true
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	fmt.Fprintf(p.w, "%s: %d/%d done in %s\n", p.step, p.done, p.total, roundDuration(p.now().Sub(p.started)))
}

func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
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
	// A step that ends short of its count (failures, an interruption)
	// still gets its last line.
	if p.step != "" && !p.ended {
		p.endLocked()
	}
	p.step = ""
}
