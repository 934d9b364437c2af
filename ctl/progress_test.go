package ctl

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the ticker's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Off a terminal, a step prints plain lines: while it runs, its count,
// elapsed time and ETA whenever it has been silent for a while (even when
// no unit finishes in that time), and when it ends, its count and time; a
// step cut short still gets its last line.
func TestProgressPlainLines(t *testing.T) {
	var out lockedBuffer
	p := &progress{w: &out, lines: true, every: 30 * time.Millisecond, now: time.Now}
	p.Step("point 1/2 isl 8 osl 2 c 1", 4)
	p.Done(1)
	// No unit finishes for a while: the ticker speaks.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "1/4 (25%)") {
		if time.Now().After(deadline) {
			t.Fatalf("no line while the step ran:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Done(3)
	p.Step("point 2/2 isl 8 osl 2 c 1", 2)
	p.Done(1)
	p.Finish()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	running := regexp.MustCompile(`^point 1/2 isl 8 osl 2 c 1: 1/4 \(25%\), [0-9.]+m?s elapsed, ETA [0-9.]+m?s$`)
	if !running.MatchString(lines[0]) {
		t.Errorf("running line %q", lines[0])
	}
	ends := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "point 1/2 isl 8 osl 2 c 1: 4/4 done in "),
			strings.HasPrefix(l, "point 2/2 isl 8 osl 2 c 1: 1/2 done in "):
			ends++
		case running.MatchString(l):
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	if ends != 2 {
		t.Errorf("%d end lines, want one per step:\n%s", ends, out.String())
	}
	// Nothing after Finish: the ticker is stopped.
	n := len(out.String())
	time.Sleep(100 * time.Millisecond)
	if len(out.String()) != n {
		t.Errorf("lines after Finish:\n%s", out.String())
	}
}

// ttisctl bench in a log (stderr not a terminal) says how far each step
// got, in plain lines.
func TestBenchProgressInALog(t *testing.T) {
	srv := fakeInference(t, false, nil)
	out, code := runCtl(t, "bench", "--url", srv.URL, "--isl", "8", "--osl", "2", "--num-prompts", "3", "--num-warmups", "0",
		"--no-server-tokenizer", "--state-dir", t.TempDir())
	if code != 0 || !regexp.MustCompile(`(?m)^benchmark: 3/3 done in [0-9.]+m?s$`).MatchString(out) {
		t.Errorf("exit %d, want a line for the finished point:\n%s", code, out)
	}
	out, _ = runCtl(t, "bench", "--url", srv.URL, "--isl", "8", "--osl", "2", "--num-prompts", "3", "--num-warmups", "0",
		"--no-server-tokenizer", "--state-dir", t.TempDir(), "--no-progress")
	if strings.Contains(out, "done in") {
		t.Errorf("--no-progress printed progress:\n%s", out)
	}
}
