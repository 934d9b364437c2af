package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// newHasher returns the hash a file's content is checked with and its
// expected digest: sha256 for LFS files, the git blob id (sha1 over
// "blob SIZE\0" and the content) for the others.
func newHasher(f File) (hash.Hash, string) {
	if f.LFS != nil {
		return sha256.New(), f.LFS.SHA256
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", f.Size)
	return h, f.OID
}

// fileURL is the resolve URL of a file at a commit; each path segment is
// escaped.
func (c *Client) fileURL(repo Repo, commit, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.cfg.Endpoint + repo.filePrefix() + "/resolve/" + commit + "/" + strings.Join(segs, "/")
}

// progressWriter reports bytes as they are written.
type progressWriter struct {
	report func(Progress)
	p      Progress
	step   int64
	last   int64
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.Done += int64(len(b))
	if w.p.Done-w.last >= w.step || w.p.Done == w.p.Total {
		w.last = w.p.Done
		w.report(w.p)
	}
	return len(b), nil
}

// Fetch makes f (of repo at commit) present and verified in the cache and
// returns its snapshot path. A blob already cached is linked without a
// download; a partial blob is resumed with a Range request; a dropped
// connection is retried (resuming) within the client's tries.
func (c *Client) Fetch(ctx context.Context, repo Repo, commit string, f File) (string, error) {
	if err := repo.Validate(); err != nil {
		return "", err
	}
	if err := f.check(); err != nil {
		return "", err
	}
	if !IsCommit(commit) {
		return "", fmt.Errorf("hub fetch %s: %q is not a commit id", repo, commit)
	}
	snap := filepath.Join(c.SnapshotDir(repo, commit), filepath.FromSlash(f.Path))
	blob := c.blobPath(repo, f.blobKey())
	if st, err := os.Stat(blob); err == nil && st.Size() == f.contentSize() {
		if err := link(blob, snap); err != nil {
			return "", err
		}
		c.report(Progress{Repo: repo, Path: f.Path, Done: f.contentSize(), Total: f.contentSize(), Cached: true, Finished: true})
		return snap, nil
	}
	if c.cfg.Offline {
		return "", &MissingError{Repo: repo, Revision: commit, Missing: []string{f.Path}}
	}
	var lastErr error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		err := c.download(ctx, repo, commit, f, blob)
		if err == nil {
			if err := link(blob, snap); err != nil {
				return "", err
			}
			return snap, nil
		}
		var he *Error
		if ctx.Err() != nil || errors.Is(err, ErrChecksum) || (errors.As(err, &he) && he.Status != http.StatusTooManyRequests && he.Status < 500) {
			return "", err
		}
		lastErr = err
		if attempt < c.cfg.MaxAttempts {
			if err := sleep(ctx, min(backoff(attempt), c.cfg.MaxRetryWait)); err != nil {
				return "", err
			}
		}
	}
	return "", lastErr
}

func (c *Client) report(p Progress) {
	if c.cfg.Progress != nil {
		c.progressMu.Lock()
		defer c.progressMu.Unlock()
		c.cfg.Progress(p)
	}
}

// download fetches f into blob through blob.incomplete, resuming what a
// previous try left there, and verifies it before the rename.
func (c *Client) download(ctx context.Context, repo Repo, commit string, f File, blob string) error {
	total := f.contentSize()
	part := blob + ".incomplete"
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	defer out.Close()
	// Another pull of the same file (ttisctl while a scheduled run pulls)
	// waits for this one instead of writing into the same partial file.
	if err := lockFile(ctx, out); err != nil {
		return err
	}
	if st, err := os.Stat(blob); err == nil && st.Size() == total {
		// The other pull finished it; drop the empty partial file this
		// one may have created.
		if pst, err := os.Stat(part); err == nil {
			if ost, err := out.Stat(); err == nil && os.SameFile(pst, ost) && pst.Size() == 0 {
				os.Remove(part)
			}
		}
		return nil
	}
	if _, err := os.Stat(part); err != nil {
		// The other pull renamed or removed the partial file this one
		// opened: start again on a fresh one.
		return fmt.Errorf("hub download %s %s: the partial file changed under a concurrent pull, retrying", repo, f.Path)
	}
	h, want := newHasher(f)
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	if have > total {
		have = 0
	}
	if have > 0 {
		// The hash covers the kept prefix too.
		if _, err := io.Copy(h, io.NewSectionReader(out, 0, have)); err != nil {
			return fmt.Errorf("hub cache: %w", err)
		}
	}
	// The bytes as stored: resuming and hashing need the identity
	// encoding (huggingface_hub asks the same).
	hdr := http.Header{"Accept-Encoding": {"identity"}}
	if have > 0 && have < total {
		hdr.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	var body io.Reader
	resumed := int64(0)
	if have < total || total == 0 {
		// A server that stops sending ends the try (which is resumed)
		// instead of hanging it: each read re-arms the timer.
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stall := time.AfterFunc(c.cfg.StallTimeout, cancel)
		defer stall.Stop()
		resp, err := c.do(dctx, "download", repo, http.MethodGet, c.fileURL(repo, commit, f.Path), hdr)
		if err != nil {
			if ctx.Err() == nil && dctx.Err() != nil {
				return fmt.Errorf("hub download %s %s: no answer for %s", repo, f.Path, c.cfg.StallTimeout)
			}
			return err
		}
		body = &stallReader{r: resp.Body, timer: stall, d: c.cfg.StallTimeout}
		defer resp.Body.Close()
		switch {
		case have > 0 && resp.StatusCode == http.StatusPartialContent:
			if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
				return fmt.Errorf("hub download %s %s: Content-Range %q does not start at byte %d", repo, f.Path, resp.Header.Get("Content-Range"), have)
			}
			resumed = have
		default:
			// The server ignored the range (or none was asked): start over.
			if have > 0 {
				h, _ = newHasher(f)
			}
			have = 0
			if err := out.Truncate(0); err != nil {
				return fmt.Errorf("hub cache: %w", err)
			}
		}
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	pw := &progressWriter{report: c.report, p: Progress{Repo: repo, Path: f.Path, Done: have, Total: total, Resumed: resumed}, step: max(total/100, 1<<20)}
	if body != nil {
		// One byte past the expected size is enough to know it is wrong.
		n, err := io.CopyBuffer(io.MultiWriter(out, h, pw), io.LimitReader(body, total-have+1), make([]byte, 1<<20))
		if err != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("no byte for %s (stalled)", c.cfg.StallTimeout)
		}
		if err != nil {
			return fmt.Errorf("hub download %s %s: after %d of %d bytes: %w", repo, f.Path, have+n, total, err)
		}
		have += n
	}
	if have != total {
		if have > total {
			os.Remove(part)
			return fmt.Errorf("hub download %s %s: %w: more than the %d bytes the Hub lists", repo, f.Path, ErrChecksum, total)
		}
		return fmt.Errorf("hub download %s %s: connection ended after %d of %d bytes", repo, f.Path, have, total)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		out.Close()
		os.Remove(part)
		return fmt.Errorf("hub download %s %s: %w: got %s, the Hub lists %s", repo, f.Path, ErrChecksum, got, want)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	if err := os.Rename(part, blob); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	pw.p.Finished = true
	c.report(pw.p)
	return nil
}

// contentRangeStart reads the first byte of "bytes START-END/TOTAL".
func contentRangeStart(v string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(start, 10, 64)
	return n, err == nil && n >= 0
}

// link puts blob at snap: a hard link (the snapshot folder then stands on
// its own, e.g. bind-mounted into a container), a relative symlink where
// hard links are refused; replaced atomically.
func link(blob, snap string) error {
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	if st, err := os.Stat(snap); err == nil {
		if bst, err := os.Stat(blob); err == nil && os.SameFile(st, bst) {
			return nil
		}
	}
	tmp := filepath.Join(filepath.Dir(snap), ".tmp-"+filepath.Base(snap))
	os.Remove(tmp)
	if err := os.Link(blob, tmp); err != nil {
		rel, rerr := filepath.Rel(filepath.Dir(snap), blob)
		if rerr != nil {
			return fmt.Errorf("hub cache: %w", err)
		}
		if err := os.Symlink(rel, tmp); err != nil {
			return fmt.Errorf("hub cache: %w", err)
		}
	}
	if err := os.Rename(tmp, snap); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub cache: %w", err)
	}
	return nil
}

// lockFile takes an exclusive advisory lock on f, polling so that ctx can
// end the wait; the lock goes with f's close.
func lockFile(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("hub cache: lock %s: %w", f.Name(), err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// stallReader re-arms the stall timer after every read that made progress.
type stallReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	return n, err
}
