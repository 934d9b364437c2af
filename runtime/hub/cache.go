package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/units/hardened"
)

// The cache is a folder others may write (a shared HF_HOME): what it holds
// is read the hardened way (units/hardened), never blocking on a pipe or a
// device node, within these bounds.
const (
	maxRefBytes      = 4 << 10   // refs/<revision>: a commit id
	maxTreeBytes     = 64 << 20  // trees/<commit>.json: a repository's file listing
	maxCacheEntries  = 1_000_000 // entries of one cache folder
	cacheReadTimeout = 10 * time.Second
)

// readCacheFile reads one of the cache's small files.
func readCacheFile(path string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cacheReadTimeout)
	defer cancel()
	return hardened.ReadFile(ctx, path, max)
}

// readCacheDir lists one of the cache's folders.
func readCacheDir(path string) ([]os.DirEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cacheReadTimeout)
	defer cancel()
	return hardened.ReadDir(ctx, path, maxCacheEntries)
}

// repoDir is the repository's folder in the cache.
func (c *Client) repoDir(repo Repo) string { return filepath.Join(c.cfg.CacheDir, repo.cacheName()) }

// SnapshotDir is the folder of repo's files at commit.
func (c *Client) SnapshotDir(repo Repo, commit string) string {
	return filepath.Join(c.repoDir(repo), "snapshots", commit)
}

func (c *Client) blobPath(repo Repo, key string) string {
	return filepath.Join(c.repoDir(repo), "blobs", key)
}

// writeFileAtomic writes data to path through a temporary file, fsync and
// rename, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// refFile is where a revision's commit is recorded; the revision is
// path-escaped so that "refs/convert/parquet" is one file name.
func (c *Client) refFile(repo Repo, rev string) string {
	return filepath.Join(c.repoDir(repo), "refs", url.PathEscape(rev))
}

func (c *Client) writeRef(repo Repo, rev, commit string) error {
	if IsCommit(rev) {
		return nil
	}
	if err := writeFileAtomic(c.refFile(repo, rev), []byte(commit)); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	return nil
}

// cachedRef is the commit rev resolved to when last online.
func (c *Client) cachedRef(repo Repo, rev string) (string, error) {
	if IsCommit(rev) {
		return rev, nil
	}
	if err := checkRevision(rev); err != nil {
		return "", err
	}
	b, err := readCacheFile(c.refFile(repo, rev), maxRefBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNotCached
	}
	if err != nil {
		return "", fmt.Errorf("hub cache: %w (delete it and pull again)", err)
	}
	commit := strings.TrimSpace(string(b))
	if !IsCommit(commit) {
		return "", fmt.Errorf("hub cache: %s holds %q, not a commit id (pull again while online)", c.refFile(repo, rev), commit)
	}
	return commit, nil
}

func (c *Client) treeFile(repo Repo, commit string) string {
	return filepath.Join(c.repoDir(repo), "trees", commit+".json")
}

func (c *Client) writeTree(repo Repo, commit string, files []File) error {
	data, err := json.MarshalIndent(files, "", " ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(c.treeFile(repo, commit), data); err != nil {
		return fmt.Errorf("hub cache: %w", err)
	}
	return nil
}

func (c *Client) cachedTree(repo Repo, commit string) ([]File, error) {
	data, err := readCacheFile(c.treeFile(repo, commit), maxTreeBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNotCached
	}
	if err != nil {
		return nil, fmt.Errorf("hub cache: %w (delete it and pull again)", err)
	}
	var files []File
	if err := json.Unmarshal(data, &files); err != nil {
		return nil, fmt.Errorf("hub cache %s: %w (delete it and pull again)", c.treeFile(repo, commit), err)
	}
	for _, f := range files {
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("hub cache %s: %w (delete it and pull again)", c.treeFile(repo, commit), err)
		}
	}
	return files, nil
}

// CachedRepo describes one repository in the cache.
type CachedRepo struct {
	Repo Repo `json:"repo"`
	// Refs maps the revisions pulled to their commits.
	Refs map[string]string `json:"refs"`
	// Snapshots are the commits with files, and how many files each has.
	Snapshots map[string]int `json:"snapshots"`
	// Bytes is the size of the repository's blobs.
	Bytes int64 `json:"bytes"`
	// Partial is the size of unfinished downloads (resumed by the next pull).
	Partial int64  `json:"partial,omitempty"`
	Dir     string `json:"dir"`
}

// List describes every repository in the cache, sorted.
func (c *Client) List() ([]CachedRepo, error) {
	entries, err := readCacheDir(c.cfg.CacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub cache: %w", err)
	}
	var out []CachedRepo
	for _, e := range entries {
		repo, ok := parseCacheName(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		cr := CachedRepo{Repo: repo, Refs: map[string]string{}, Snapshots: map[string]int{}, Dir: c.repoDir(repo)}
		refs, _ := readCacheDir(filepath.Join(cr.Dir, "refs"))
		for _, r := range refs {
			rev, err := url.PathUnescape(r.Name())
			if err != nil || strings.HasPrefix(r.Name(), ".tmp-") {
				continue
			}
			if commit, err := c.cachedRef(repo, rev); err == nil {
				cr.Refs[rev] = commit
			}
		}
		snaps, _ := readCacheDir(filepath.Join(cr.Dir, "snapshots"))
		for _, s := range snaps {
			if !IsCommit(s.Name()) {
				continue
			}
			n := 0
			_ = filepath.WalkDir(filepath.Join(cr.Dir, "snapshots", s.Name()), func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".tmp-") {
					n++
				}
				return nil
			})
			cr.Snapshots[s.Name()] = n
		}
		blobs, _ := readCacheDir(filepath.Join(cr.Dir, "blobs"))
		for _, b := range blobs {
			info, err := b.Info()
			if err != nil {
				continue
			}
			if strings.HasSuffix(b.Name(), ".incomplete") {
				cr.Partial += info.Size()
			} else {
				cr.Bytes += info.Size()
			}
		}
		out = append(out, cr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Repo.String() < out[j].Repo.String() })
	return out, nil
}

// parseCacheName reads a cache folder name back into a repository.
func parseCacheName(name string) (Repo, bool) {
	kind, rest, ok := strings.Cut(name, "s--")
	if !ok {
		return Repo{}, false
	}
	r := Repo{Type: RepoType(kind), ID: strings.Replace(rest, "--", "/", 1)}
	return r, r.Validate() == nil
}
