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
// new daemon adopting the server) starts after the hole: nothing unread is
// lost and the read part is not shown twice.
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
	if st.Size != 2<<20 || st.Blocks*512 >= 1<<20 {
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
	if again.Len() >= 2<<20 || !strings.HasSuffix(again.String(), "after the daemon died\n") {
		t.Fatalf("resumed read of %d bytes ending %q", again.Len(), again.String()[max(0, again.Len()-30):])
	}
}
