package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/runtime/retryafter"
)

// File is one file of a repository at a commit, as the tree API lists it.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// OID is the git blob id (sha1 hex); for an LFS file it is the
	// pointer's.
	OID string `json:"oid"`
	// LFS is set for files stored in LFS: the content's sha256 and size.
	LFS *LFS `json:"lfs,omitempty"`
}

// LFS is the Hub's LFS metadata of a file.
type LFS struct {
	SHA256 string `json:"oid"`
	Size   int64  `json:"size"`
}

// blobKey is the file's content address in the cache.
func (f File) blobKey() string {
	if f.LFS != nil {
		return f.LFS.SHA256
	}
	return f.OID
}

// contentSize is the size of the content a download yields.
func (f File) contentSize() int64 {
	if f.LFS != nil {
		return f.LFS.Size
	}
	return f.Size
}

var (
	sha1Hex   = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// IsCommit says whether rev is a full commit id.
func IsCommit(rev string) bool { return sha1Hex.MatchString(rev) }

// validPath accepts a repository-relative file path that stays inside its
// folder: the Hub's answers are not trusted to name cache files.
func validPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || path.Clean(p) != p {
		return fmt.Errorf("file path %q is not a clean relative path", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return fmt.Errorf("file path %q has a %q segment", p, seg)
		}
	}
	return nil
}

// check validates a file entry from the Hub.
func (f File) check() error {
	if err := validPath(f.Path); err != nil {
		return err
	}
	if f.Size < 0 {
		return fmt.Errorf("%s: negative size %d", f.Path, f.Size)
	}
	if f.LFS != nil {
		if !sha256Hex.MatchString(f.LFS.SHA256) {
			return fmt.Errorf("%s: lfs.oid %q is not a sha256 hex digest", f.Path, f.LFS.SHA256)
		}
		if f.LFS.Size < 0 {
			return fmt.Errorf("%s: negative lfs.size %d", f.Path, f.LFS.Size)
		}
		return nil
	}
	if !sha1Hex.MatchString(f.OID) {
		return fmt.Errorf("%s: oid %q is not a git blob id (40 hex digits)", f.Path, f.OID)
	}
	return nil
}

// revisionInfo is the part of /api/{type}s/{repo}/revision/{rev} ttis uses.
type revisionInfo struct {
	ID    string          `json:"id"`
	SHA   string          `json:"sha"`
	Gated json.RawMessage `json:"gated"`
}

// ParseRevision reads a revision answer and returns its commit id.
func ParseRevision(body []byte) (string, error) {
	var info revisionInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("revision answer: %w", err)
	}
	if !sha1Hex.MatchString(info.SHA) {
		return "", fmt.Errorf("revision answer: sha %q is not a commit id", info.SHA)
	}
	return info.SHA, nil
}

// treeEntry is one entry of the tree API.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID         string `json:"oid"`
		Size        int64  `json:"size"`
		PointerSize int64  `json:"pointerSize"`
	} `json:"lfs"`
}

// ParseTree reads one page of the tree API: files (directories skipped),
// each checked.
func ParseTree(body []byte) ([]File, error) {
	var entries []treeEntry
	if err := json.Unmarshal(body, &entries); err != nil {
		return nil, fmt.Errorf("tree answer: %w", err)
	}
	var out []File
	for i, e := range entries {
		switch e.Type {
		case "directory":
			continue
		case "file":
		default:
			return nil, fmt.Errorf("tree answer entry %d (%q): type %q, want file or directory", i, e.Path, e.Type)
		}
		f := File{Path: e.Path, Size: e.Size, OID: e.OID}
		if e.LFS != nil {
			f.LFS = &LFS{SHA256: e.LFS.OID, Size: e.LFS.Size}
		}
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("tree answer entry %d: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// NextLink returns the rel="next" URL of an RFC 8288 Link header (the
// tree API's pagination), or "".
func NextLink(header string) string {
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		start, end := strings.IndexByte(part, '<'), strings.IndexByte(part, '>')
		if start != 0 || end < 0 {
			continue
		}
		for _, param := range strings.Split(part[end+1:], ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.TrimSpace(k) == "rel" && strings.Trim(strings.TrimSpace(v), `"`) == "next" {
				return part[1:end]
			}
		}
	}
	return ""
}

func parseErrorBody(body []byte) (string, error) {
	var v struct {
		Error string `json:"error"`
	}
	err := json.Unmarshal(body, &v)
	return v.Error, err
}

// maxAPIBody bounds an API answer (a tree page of a large repository is a
// few MiB).
const maxAPIBody = 64 << 20

// do sends a request with retries: 429 waits Retry-After, 5xx and dropped
// connections back off; each wait is capped and the tries are bounded. The
// response is a success (2xx) or an *Error.
func (c *Client) do(ctx context.Context, op string, repo Repo, method, u string, header http.Header) (*http.Response, error) {
	var lastErr error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", c.cfg.UserAgent)
		if c.cfg.Token != "" && req.URL.Host == c.endpoint.Host {
			req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		}
		resp, err := c.http.Do(req)
		wait := backoff(attempt)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lastErr = fmt.Errorf("hub %s %s: %w", op, repo, err)
			// A name that does not resolve will not resolve on the
			// next try either (an offline host): say so at once.
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				return nil, fmt.Errorf("%w (no network? use --offline with a pulled cache, or HF_ENDPOINT for a mirror)", lastErr)
			}
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return resp, nil
		default:
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			he := c.classify(op, repo, redact(u), resp, body)
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
				return nil, he
			}
			if ra, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now(), c.cfg.MaxRetryWait); ok {
				wait = ra
			}
			lastErr = he
		}
		if attempt == c.cfg.MaxAttempts {
			break
		}
		if err := sleep(ctx, min(wait, c.cfg.MaxRetryWait)); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("after %d tries: %w", c.cfg.MaxAttempts, lastErr)
}

// backoff is the wait before try attempt+1 when the Hub gave none.
func backoff(attempt int) time.Duration {
	return min(time.Second<<(attempt-1), 30*time.Second)
}

// redact drops a URL's query (a signed CDN URL's credentials) from
// messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.RawQuery, p.User = "", nil
	return p.String()
}

func (c *Client) getJSON(ctx context.Context, op string, repo Repo, u string) ([]byte, http.Header, error) {
	resp, err := c.do(ctx, op, repo, http.MethodGet, u, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("hub %s %s: %w", op, repo, err)
	}
	if len(body) > maxAPIBody {
		return nil, nil, fmt.Errorf("hub %s %s: answer larger than %d bytes", op, repo, maxAPIBody)
	}
	return body, resp.Header, nil
}

// Resolve returns the commit a revision (branch, tag, commit; empty means
// main) points at.
func (c *Client) Resolve(ctx context.Context, repo Repo, rev string) (string, error) {
	if err := repo.Validate(); err != nil {
		return "", err
	}
	if rev == "" {
		rev = "main"
	}
	if err := checkRevision(rev); err != nil {
		return "", err
	}
	if c.cfg.Offline {
		commit, err := c.cachedRef(repo, rev)
		if err != nil {
			return "", &MissingError{Repo: repo, Revision: rev, Missing: []string{"revision " + rev}}
		}
		return commit, nil
	}
	u := c.cfg.Endpoint + repo.apiPrefix() + "/revision/" + url.PathEscape(rev)
	body, _, err := c.getJSON(ctx, "resolve", repo, u)
	if err != nil {
		return "", err
	}
	commit, err := ParseRevision(body)
	if err != nil {
		return "", fmt.Errorf("hub resolve %s@%s: %w", repo, rev, err)
	}
	if err := c.writeRef(repo, rev, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// maxTreePages bounds the pagination of one listing.
const maxTreePages = 1000

// ListFiles lists every file of repo at commit (from the cache's copy of
// the listing when it has one: a commit's files never change).
func (c *Client) ListFiles(ctx context.Context, repo Repo, commit string) ([]File, error) {
	if err := repo.Validate(); err != nil {
		return nil, err
	}
	if !IsCommit(commit) {
		return nil, fmt.Errorf("hub list %s: %q is not a commit id (resolve it first)", repo, commit)
	}
	if files, err := c.cachedTree(repo, commit); err == nil {
		return files, nil
	} else if c.cfg.Offline {
		return nil, &MissingError{Repo: repo, Revision: commit, Missing: []string{"file list of " + commit}}
	}
	u := c.cfg.Endpoint + repo.apiPrefix() + "/tree/" + commit + "?recursive=true"
	var files []File
	for page := 0; u != ""; page++ {
		if page == maxTreePages {
			return nil, fmt.Errorf("hub list %s: more than %d pages", repo, maxTreePages)
		}
		body, hdr, err := c.getJSON(ctx, "list", repo, u)
		if err != nil {
			return nil, err
		}
		pageFiles, err := ParseTree(body)
		if err != nil {
			return nil, fmt.Errorf("hub list %s@%s: %w", repo, commit, err)
		}
		files = append(files, pageFiles...)
		next := NextLink(hdr.Get("Link"))
		if next != "" {
			nu, err := c.endpoint.Parse(next)
			if err != nil || nu.Host != c.endpoint.Host {
				return nil, fmt.Errorf("hub list %s: next page %q is not on %s", repo, redact(next), c.cfg.Endpoint)
			}
			next = nu.String()
		}
		u = next
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Path] {
			return nil, fmt.Errorf("hub list %s@%s: %s listed twice", repo, commit, f.Path)
		}
		seen[f.Path] = true
	}
	if err := c.writeTree(repo, commit, files); err != nil {
		return nil, err
	}
	return files, nil
}

// errNotCached is an internal cache miss.
var errNotCached = errors.New("not cached")
