package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// block is the unit in which read output is freed: each fully read block
// is punched out at once, so a server running for months never fills the
// state folder.
const block = 4096

// tails follows a server's output files while it runs.
type tails struct {
	files    []*tail
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	ended    chan struct{} // closed when follow has drained and closed
}

// tail follows one output file. How far it has read is kept in a
// sidecar file (<output>.offset), so a daemon that takes the file over
// (adopting the server) goes on from there: nothing shown twice, nothing
// unread skipped.
type tail struct {
	f    *os.File
	mark *os.File // the sidecar: the offset, 8 bytes little-endian
	w    io.Writer
	off  int64
	free int64 // bytes at the start already freed
	buf  []byte
	// noCompact is set once the file system refused to punch a hole.
	noCompact bool
}

// openTails opens output files to follow: from their start for a new
// process, from where the last reader stopped when resume is set.
func openTails(paths []string, ws []io.Writer, resume bool) (*tails, error) {
	t := &tails{done: make(chan struct{}), ended: make(chan struct{})}
	for i, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("server output: %w", err)
		}
		mark, err := os.OpenFile(p+".offset", os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			f.Close()
			t.close()
			return nil, fmt.Errorf("server output: %w", err)
		}
		tl := &tail{f: f, mark: mark, w: ws[i], buf: make([]byte, 32<<10)}
		if resume {
			tl.resume()
		} else {
			tl.save()
		}
		t.files = append(t.files, tl)
	}
	return t, nil
}

// resume starts where the sidecar says the last reader stopped, or, when
// it says nothing usable, at the first byte not punched out.
func (tl *tail) resume() {
	var b [8]byte
	size, _ := tl.f.Seek(0, io.SeekEnd)
	if n, _ := tl.mark.ReadAt(b[:], 0); n == 8 {
		if off := int64(binary.LittleEndian.Uint64(b[:])); off >= 0 && off <= size {
			tl.off, tl.free = off, off/block*block
			return
		}
	}
	off, err := unix.Seek(int(tl.f.Fd()), 0, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO): // holes only: nothing unread
		off = size
	case err != nil: // no SEEK_DATA here: read it all
		off = 0
	}
	tl.off, tl.free = off, off
}

// save records the read offset in the sidecar.
func (tl *tail) save() {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(tl.off))
	_, _ = tl.mark.WriteAt(b[:], 0)
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
		tl.mark.Close()
	}
}

// read hands what the file gained since the last read to the writer.
func (tl *tail) read() {
	start := tl.off
	defer func() {
		if tl.off != start {
			tl.save()
			tl.compact()
		}
	}()
	for {
		n, err := tl.f.ReadAt(tl.buf, tl.off)
		if n > 0 {
			_, _ = tl.w.Write(tl.buf[:n])
			tl.off += int64(n)
		}
		if err != nil || n < len(tl.buf) {
			return
		}
	}
}

// compact frees the part of the file already read by punching a hole
// over it: the server appends (O_APPEND) at the end as before, nothing
// unread is touched and nothing is lost, yet the disk space is returned.
// A file system that cannot punch holes keeps the whole file.
func (tl *tail) compact() {
	end := tl.off / block * block
	if tl.noCompact || end <= tl.free {
		return
	}
	err := unix.Fallocate(int(tl.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, tl.free, end-tl.free)
	if err != nil {
		tl.noCompact = true
		return
	}
	tl.free = end
}
