package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func lines(b *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func TestJournalTextHasPrioritiesAndNoTime(t *testing.T) {
	var b bytes.Buffer
	log, err := NewFor(&b, Sink{Journal: true}, FormatAuto, "debug")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("d", "took", 1500*time.Millisecond)
	log.Info("i")
	log.Log(t.Context(), slog.LevelInfo+2, "n")
	log.Warn("w", "unit", "a b")
	log.Error("e", "err", "x\ny")
	log.Log(t.Context(), slog.LevelError+4, "c")
	want := []string{
		`<7>level=DEBUG msg=d took=1.5s`,
		`<6>level=INFO msg=i`,
		`<5>level=INFO+2 msg=n`,
		`<4>level=WARN msg=w unit="a b"`,
		`<3>level=ERROR msg=e err="x\ny"`,
		`<2>level=ERROR+4 msg=c`,
	}
	got := lines(&b)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal text:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJournalJSONPrefixesEachObject(t *testing.T) {
	var b bytes.Buffer
	log, err := NewFor(&b, Sink{Journal: true}, FormatJSON, "info")
	if err != nil {
		t.Fatal(err)
	}
	log.With("unit", "u").WithGroup("g").Warn("slow", "took", 2*time.Minute)
	line := lines(&b)[0]
	if !strings.HasPrefix(line, "<4>{") {
		t.Fatalf("line %q: want <4> then a JSON object", line)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line[3:]), &rec); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	if _, ok := rec["time"]; ok {
		t.Errorf("journal line carries a time: %q", line)
	}
	if g, _ := rec["g"].(map[string]any); g["took"] != "2m0s" || rec["unit"] != "u" {
		t.Errorf("line %q: want unit=u and g.took=\"2m0s\"", line)
	}
}

// TestDurationsAsText checks every handler off the journal: JSON (pipe),
// plain text and coloured text.
func TestDurationsAsText(t *testing.T) {
	for _, tc := range []struct {
		sink   Sink
		format string
		want   string
	}{
		{Sink{}, FormatAuto, `"took":"1m30s"`},
		{Sink{}, FormatJSON, `"took":"1m30s"`},
		{Sink{}, FormatText, `took=1m30s`},
		{Sink{Terminal: true}, FormatAuto, `1m30s`},
		{Sink{Journal: true}, FormatText, `took=1m30s`},
	} {
		var b bytes.Buffer
		log, err := NewFor(&b, tc.sink, tc.format, "info")
		if err != nil {
			t.Fatal(err)
		}
		log.WithGroup("run").Info("done", "took", 90*time.Second)
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "90000000000") {
			t.Errorf("%+v %s: %q, want %s", tc.sink, tc.format, b.String(), tc.want)
		}
		if !tc.sink.Journal && strings.HasPrefix(b.String(), "<") {
			t.Errorf("%+v %s: priority prefix off the journal: %q", tc.sink, tc.format, b.String())
		}
	}
}

// TestPrefixMatchesLevelUnderConcurrency: loggers derived with With share
// one writer; each line must carry its own record's priority.
func TestPrefixMatchesLevelUnderConcurrency(t *testing.T) {
	var b bytes.Buffer
	log, err := NewFor(&b, Sink{Journal: true}, FormatText, "debug")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		l := log.With("worker", i)
		wg.Go(func() {
			for range 200 {
				if i%2 == 0 {
					l.Warn("w")
				} else {
					l.Debug("d")
				}
			}
		})
	}
	wg.Wait()
	got := lines(&b)
	if len(got) != 1600 {
		t.Fatalf("%d lines, want 1600", len(got))
	}
	for _, l := range got {
		if !strings.HasPrefix(l, "<4>level=WARN ") && !strings.HasPrefix(l, "<7>level=DEBUG ") {
			t.Fatalf("line %q: prefix does not match its level", l)
		}
	}
}

func devIno(t *testing.T, f *os.File) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

func TestIsJournalStream(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := os.Create(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	id := devIno(t, f)
	for _, tc := range []struct {
		f    *os.File
		env  string
		want bool
	}{
		{f, id, true},
		{other, id, false},
		{f, "", false},
		{f, "garbage", false},
		{nil, id, false},
	} {
		if got := IsJournalStream(tc.f, tc.env); got != tc.want {
			t.Errorf("IsJournalStream(%v, %q) = %v, want %v", tc.f.Name(), tc.env, got, tc.want)
		}
	}
}

// TestNewDetectsJournalStream: New on a file that JOURNAL_STREAM names
// writes priority-prefixed lines; on any other file, JSON.
func TestNewDetectsJournalStream(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pipe, err := os.Create(filepath.Join(dir, "pipe"))
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	t.Setenv("JOURNAL_STREAM", devIno(t, f))
	for _, w := range []*os.File{f, pipe} {
		log, err := New(w, FormatAuto, "info")
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("disk almost full")
	}
	for name, want := range map[string]string{"journal": "<4>level=WARN msg=\"disk almost full\"\n", "pipe": `{"time":`} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("%s: %q, want it to start with %q", name, b, want)
		}
	}
}

func TestBadFormatAndLevel(t *testing.T) {
	for _, s := range []Sink{{}, {Journal: true}} {
		if _, err := NewFor(&bytes.Buffer{}, s, "xml", "info"); err == nil || !strings.Contains(err.Error(), `log format "xml"`) {
			t.Errorf("%+v: format xml: %v", s, err)
		}
	}
	if _, err := NewFor(&bytes.Buffer{}, Sink{}, FormatJSON, "loud"); err == nil || !strings.Contains(err.Error(), `log level "loud"`) {
		t.Errorf("level loud: %v", err)
	}
}

// TestChildProcessStderr runs this test binary as a child whose stderr is
// a file that JOURNAL_STREAM names (as systemd sets it up) and one whose
// stderr is not (a unit server under ttisd inherits the variable but
// writes into a pipe).
func TestChildProcessStderr(t *testing.T) {
	if os.Getenv("TTIS_LOGGING_CHILD") == "1" {
		log, err := New(os.Stderr, FormatAuto, "info")
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		log.Warn("slow start", "took", 3*time.Second)
		os.Exit(0)
	}
	dir := t.TempDir()
	journal, err := os.Create(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	for _, tc := range []struct {
		stderr string
		want   string
	}{
		{"journal", "<4>level=WARN msg=\"slow start\" took=3s\n"},
		{"pipe", `"level":"WARN","msg":"slow start","took":"3s"}` + "\n"},
	} {
		f, err := os.OpenFile(filepath.Join(dir, tc.stderr), os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcessStderr$")
		cmd.Env = append(os.Environ(), "TTIS_LOGGING_CHILD=1", "JOURNAL_STREAM="+devIno(t, journal))
		cmd.Stderr = f
		out, err := cmd.Output()
		f.Close()
		if err != nil {
			t.Fatalf("child: %v: %s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, tc.stderr))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(b), tc.want) {
			t.Errorf("stderr to %s: %q, want it to end with %q", tc.stderr, b, tc.want)
		}
	}
}
