package supervise

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Output already handed to the daemon is freed from the file (a hole is
// punched over it) while the file keeps its size, and a later reader (a
// new daemon adopting the server) goes on where the first stopped:
// nothing unread is lost and nothing read is shown twice.
func TestTailCompactsAndResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.stderr")
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	line := strings.Repeat("x", 1023) + "\n"
	for range 2048 { // 2 MiB
		if _, err := w.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	ts, err := openTails([]string{path}, []io.Writer{&got}, false)
	if err != nil {
		t.Fatal(err)
	}
	tl := ts.files[0]
	tl.read()
	if got.Len() != 2<<20 {
		t.Fatalf("read %d bytes, want %d", got.Len(), 2<<20)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if tl.noCompact {
		t.Skip("this file system cannot punch holes")
	}
	if st.Size != 2<<20 || st.Blocks*512 > 2*block {
		t.Fatalf("after compaction: size %d, %d bytes on disk; want the size kept and the space freed", st.Size, st.Blocks*512)
	}
	if _, err := w.WriteString("after the daemon died\n"); err != nil {
		t.Fatal(err)
	}
	ts.close()

	var again bytes.Buffer
	ts2, err := openTails([]string{path}, []io.Writer{&again}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ts2.close()
	ts2.files[0].read()
	if again.String() != "after the daemon died\n" {
		t.Fatalf("resumed read of %d bytes ending %q", again.Len(), again.String()[max(0, again.Len()-30):])
	}
}

// A reader that stopped mid-block (and mid-line) is resumed exactly there;
// without its sidecar the new reader starts after the punched hole.
func TestTailResumesMidBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.stdout")
	if err := os.WriteFile(path, []byte(strings.Repeat("y", 5000)+"\nhalf a li"), 0o640); err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	ts, err := openTails([]string{path}, []io.Writer{&first}, true)
	if err != nil {
		t.Fatal(err)
	}
	ts.files[0].read()
	ts.close()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("ne\nnext\n"); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	ts, err = openTails([]string{path}, []io.Writer{&second}, true)
	if err != nil {
		t.Fatal(err)
	}
	ts.files[0].read()
	ts.close()
	if first.String()+second.String() != strings.Repeat("y", 5000)+"\nhalf a line\nnext\n" || second.String() != "ne\nnext\n" {
		t.Fatalf("second reader got %q", second.String())
	}
	if err := os.Remove(path + ".offset"); err != nil {
		t.Fatal(err)
	}
	var third bytes.Buffer
	ts, err = openTails([]string{path}, []io.Writer{&third}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.close()
	ts.files[0].read()
	if ts.files[0].noCompact {
		return // no holes here: the whole file is read again
	}
	if third.Len() >= 5000 || !strings.HasSuffix(third.String(), "next\n") {
		t.Fatalf("without the sidecar: %d bytes, %q", third.Len(), third.String()[max(0, third.Len()-20):])
	}
}
