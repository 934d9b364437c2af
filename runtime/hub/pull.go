package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/units/hardened"
)

// PullOptions selects what to pull.
type PullOptions struct {
	// Revision is a branch, tag or commit (empty: main).
	Revision string
	// Include are globs (path.Match, '*' within one folder; a pattern that
	// matches a folder takes everything under it); empty takes every file.
	// Each pattern must match at least one file.
	Include []string
	// Exclude are globs of files to leave out.
	Exclude []string
}

// LocalFile is one pulled file.
type LocalFile struct {
	Path  string `json:"path"`
	Local string `json:"local"`
	Size  int64  `json:"size"`
	// Digest is "sha256:HEX" for LFS files, "git-sha1:HEX" for the others.
	Digest string `json:"digest"`
}

// Snapshot is the result of a pull: where the files of a commit are.
type Snapshot struct {
	Repo     Repo        `json:"repo"`
	Revision string      `json:"revision"`
	Commit   string      `json:"commit"`
	Dir      string      `json:"dir"`
	Files    []LocalFile `json:"files"`
	// Downloaded counts the bytes fetched by this pull (0 when all came
	// from the cache).
	Downloaded int64 `json:"downloaded"`
}

// Match says whether p is selected by pattern: the pattern matches the
// path or one of its folders.
func Match(pattern, p string) bool {
	for q := p; q != "." && q != "/" && q != ""; q = path.Dir(q) {
		if ok, _ := path.Match(pattern, q); ok {
			return true
		}
	}
	return false
}

// CheckPattern rejects a malformed glob.
func CheckPattern(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil || pattern == "" {
		return fmt.Errorf("file pattern %q is not a valid glob", pattern)
	}
	return nil
}

// selectFiles picks the files of opts from a listing.
func selectFiles(repo Repo, commit string, files []File, opts PullOptions) ([]File, error) {
	for _, p := range append(slicesClone(opts.Include), opts.Exclude...) {
		if err := CheckPattern(p); err != nil {
			return nil, err
		}
	}
	var out []File
	used := make([]bool, len(opts.Include))
	for _, f := range files {
		in := len(opts.Include) == 0
		for i, p := range opts.Include {
			if Match(p, f.Path) {
				in, used[i] = true, true
			}
		}
		for _, p := range opts.Exclude {
			if Match(p, f.Path) {
				in = false
			}
		}
		if in {
			out = append(out, f)
		}
	}
	for i, ok := range used {
		if !ok {
			return nil, fmt.Errorf("%w: no file of %s at %s matches %q (%s)", ErrNotFound, repo, short(commit), opts.Include[i], sample(files))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// sample names a few files of a listing for an error message.
func sample(files []File) string {
	if len(files) == 0 {
		return "the repository has no files"
	}
	var names []string
	for i, f := range files {
		if i == 8 {
			names = append(names, fmt.Sprintf("and %d more", len(files)-i))
			break
		}
		names = append(names, f.Path)
	}
	return "it has " + strings.Join(names, ", ")
}

func digest(f File) string {
	if f.LFS != nil {
		return "sha256:" + f.LFS.SHA256
	}
	return "git-sha1:" + f.OID
}

// Pull resolves the revision, lists the files, selects them and makes
// each present and verified in the cache. Offline, it uses only the cache
// and fails with a *MissingError that names every missing file.
func (c *Client) Pull(ctx context.Context, repo Repo, opts PullOptions) (*Snapshot, error) {
	rev := opts.Revision
	if rev == "" {
		rev = "main"
	}
	commit, err := c.Resolve(ctx, repo, rev)
	if err != nil {
		return nil, err
	}
	files, err := c.ListFiles(ctx, repo, commit)
	if err != nil {
		var me *MissingError
		if errors.As(err, &me) {
			me.Revision = rev
		}
		return nil, err
	}
	picked, err := selectFiles(repo, commit, files, opts)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Repo: repo, Revision: rev, Commit: commit, Dir: c.SnapshotDir(repo, commit)}
	results, cause := c.fetchAll(ctx, repo, commit, picked)
	var missing []string
	var firstErr error
	for i, f := range picked {
		r := results[i]
		var me *MissingError
		switch {
		case r.err == nil:
			snap.Downloaded += r.downloaded
			snap.Files = append(snap.Files, LocalFile{Path: f.Path, Local: r.local, Size: f.contentSize(), Digest: digest(f)})
		case errors.As(r.err, &me):
			missing = append(missing, f.Path)
		case firstErr == nil && !errors.Is(r.err, errStopped) && !errors.Is(r.err, context.Canceled):
			// The failure that stopped the others, not theirs.
			firstErr = r.err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if cause != nil {
		// The failure that stopped the others, not their cancellation.
		firstErr = cause
	}
	if firstErr == nil {
		for _, r := range results {
			if r.err != nil && !errors.As(r.err, new(*MissingError)) {
				firstErr = r.err
				break
			}
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if len(missing) > 0 {
		return nil, &MissingError{Repo: repo, Revision: rev, Missing: missing}
	}
	return snap, nil
}

// errStopped marks the files not fetched because another one failed.
var errStopped = errors.New("stopped after another file failed")

type fetchResult struct {
	local      string
	downloaded int64
	err        error
}

// fetchAll fetches files with the client's workers (model weights come
// in several multi-GiB shards, as huggingface_hub's snapshot_download
// fetches them in parallel). The first failure other than a cache miss
// stops the files not started yet.
func (c *Client) fetchAll(ctx context.Context, repo Repo, commit string, files []File) ([]fetchResult, error) {
	results := make([]fetchResult, len(files))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(c.cfg.Workers, max(len(files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f := files[i]
				if ctx.Err() != nil {
					results[i].err = errStopped
					continue
				}
				before := c.partialSize(repo, f)
				cached := c.hasBlob(repo, f)
				local, err := c.Fetch(ctx, repo, commit, f)
				var me *MissingError
				if err != nil && !errors.As(err, &me) {
					cancel(err) // the first cause is kept
				}
				results[i] = fetchResult{local: local, err: err}
				if err == nil && !cached {
					results[i].downloaded = f.contentSize() - before
				}
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return results, cause
	}
	return results, nil
}

func (c *Client) hasBlob(repo Repo, f File) bool {
	st, err := os.Stat(c.blobPath(repo, f.blobKey()))
	return err == nil && st.Size() == f.contentSize()
}

func (c *Client) partialSize(repo Repo, f File) int64 {
	st, err := os.Stat(c.blobPath(repo, f.blobKey()) + ".incomplete")
	if err != nil || st.Size() > f.contentSize() {
		return 0
	}
	return st.Size()
}

// VerifyResult is one file's check.
type VerifyResult struct {
	Path string `json:"path"`
	// Status is ok, missing (not pulled) or corrupt.
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Verify re-hashes the snapshot files of repo at rev (a commit, or a
// revision pulled before) against the Hub's metadata kept with the
// listing. Only the files matching opts are checked; a corrupt blob is
// removed so that the next pull fetches it again.
func (c *Client) Verify(repo Repo, opts PullOptions) (commit string, results []VerifyResult, err error) {
	rev := opts.Revision
	if rev == "" {
		rev = "main"
	}
	commit, err = c.cachedRef(repo, rev)
	if err != nil {
		return "", nil, &MissingError{Repo: repo, Revision: rev, Missing: []string{"revision " + rev}}
	}
	files, err := c.cachedTree(repo, commit)
	if err != nil {
		return "", nil, &MissingError{Repo: repo, Revision: rev, Missing: []string{"file list of " + commit}}
	}
	picked, err := selectFiles(repo, commit, files, opts)
	if err != nil {
		return "", nil, err
	}
	for _, f := range picked {
		snap := filepath.Join(c.SnapshotDir(repo, commit), filepath.FromSlash(f.Path))
		r := VerifyResult{Path: f.Path, Status: "ok"}
		// Hardened: a pipe or a device node in the snapshot must not hang
		// the check, nor a file bigger than listed be hashed to its end.
		ctx, cancel := context.WithTimeout(context.Background(), cacheReadTimeout)
		fh, err := hardened.Open(ctx, snap, max(f.contentSize(), 1))
		cancel()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Status = "missing"
		case err != nil:
			r.Status, r.Detail = "corrupt", err.Error()
		default:
			h, want := newHasher(f)
			n, err := io.Copy(h, io.LimitReader(fh, f.contentSize()+1))
			fh.Close()
			got := fmt.Sprintf("%x", h.Sum(nil))
			switch {
			case err != nil:
				r.Status, r.Detail = "corrupt", err.Error()
			case n != f.contentSize():
				r.Status, r.Detail = "corrupt", fmt.Sprintf("%d bytes, the Hub lists %d", n, f.contentSize())
			case got != want:
				r.Status, r.Detail = "corrupt", fmt.Sprintf("digest %s, the Hub lists %s", got, want)
			}
			if r.Status == "corrupt" {
				os.Remove(snap)
				os.Remove(c.blobPath(repo, f.blobKey()))
			}
		}
		results = append(results, r)
	}
	return commit, results, nil
}

// CachedSnapshot finds, in the cache alone, the snapshot folder of repo
// at rev (a commit, or a revision pulled before) and its commit: what a
// unit mounts read-only after `ttisctl model pull`. It fails when the
// revision was never pulled or its folder is gone.
func (c *Client) CachedSnapshot(repo Repo, rev string) (dir, commit string, err error) {
	if err := repo.Validate(); err != nil {
		return "", "", err
	}
	if rev == "" {
		rev = "main"
	}
	commit, err = c.cachedRef(repo, rev)
	if err != nil {
		return "", "", &MissingError{Repo: repo, Revision: rev, Missing: []string{"revision " + rev}}
	}
	dir = c.SnapshotDir(repo, commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "", &MissingError{Repo: repo, Revision: rev, Missing: []string{"snapshot " + commit}}
	}
	return dir, commit, nil
}
