package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// compactAfter is how much read output a file may hold before the daemon
// frees it: a server running for months must not fill the state folder.
const compactAfter = 1 << 20

// tails follows a server's output files while it runs.
type tails struct {
	files    []*tail
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	ended    chan struct{} // closed when follow has drained and closed
}

// tail follows one output file.
type tail struct {
	f    *os.File
	w    io.Writer
	off  int64
	free int64 // bytes at the start already freed
	buf  []byte
	// noCompact is set once the file system refused to punch a hole.
	noCompact bool
}

func openTails(paths []string, ws []io.Writer, fromData bool) (*tails, error) {
	t := &tails{done: make(chan struct{}), ended: make(chan struct{})}
	for i, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("server output: %w", err)
		}
		tl := &tail{f: f, w: ws[i], buf: make([]byte, 32<<10)}
		if fromData {
			// An adopted server's file starts with the hole an earlier
			// daemon punched over what it had read.
			off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA)
			switch {
			case errors.Is(err, unix.ENXIO): // holes only: nothing unread
				off, _ = f.Seek(0, io.SeekEnd)
			case err != nil: // no SEEK_DATA here: read it all
				off = 0
			}
			tl.off, tl.free = off, off
		}
		t.files = append(t.files, tl)
	}
	return t, nil
}

// follow reads new output every poll until stop, then drains and closes.
func (t *tails) follow(poll time.Duration) {
	defer close(t.ended)
	defer t.close()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		for _, tl := range t.files {
			tl.read()
		}
		select {
		case <-t.done:
			for _, tl := range t.files {
				tl.read()
			}
			return
		case <-tick.C:
		}
	}
}

// stop ends following after a last read, and waits for it.
func (t *tails) stop() {
	t.stopOnce.Do(func() { close(t.done) })
	<-t.ended
}

func (t *tails) close() {
	for _, tl := range t.files {
		tl.f.Close()
	}
}

// read hands what the file gained since the last read to the writer.
func (tl *tail) read() {
	for {
		n, err := tl.f.ReadAt(tl.buf, tl.off)
		if n > 0 {
			_, _ = tl.w.Write(tl.buf[:n])
			tl.off += int64(n)
		}
		if err != nil || n < len(tl.buf) {
			break
		}
	}
	tl.compact()
}

// compact frees the part of the file already read by punching a hole
// over it: the server appends (O_APPEND) at the end as before, nothing
// unread is touched and nothing is lost, yet the disk space is returned.
// A file system that cannot punch holes keeps the whole file.
func (tl *tail) compact() {
	const block = 4096
	end := tl.off / block * block
	if tl.noCompact || end-tl.free < compactAfter {
		return
	}
	err := unix.Fallocate(int(tl.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, tl.free, end-tl.free)
	if err != nil {
		tl.noCompact = true
		return
	}
	tl.free = end
}
