// Package hub is ttis's one Hugging Face Hub client, shared by the eval
// datasets (evalsuite/taskdata) and the model weights (`ttisctl model
// pull`). It speaks the Hub's public HTTP layout as huggingface_hub does
// (src/huggingface_hub/file_download.py and hf_api.py):
//
//   - GET {endpoint}/api/{models|datasets}/{repo}/revision/{rev} resolves a
//     branch, tag or commit to the commit id ("sha");
//   - GET {endpoint}/api/{models|datasets}/{repo}/tree/{commit}?recursive=true
//     lists the files with their size, git blob id and, for LFS files, the
//     sha256 ("lfs.oid"); pages follow the Link header's rel="next";
//   - GET {endpoint}/{datasets/}{repo}/resolve/{commit}/{path} downloads a
//     file, following redirects to the CDN; a partial file resumes with a
//     Range request.
//
// Every downloaded file is verified before it enters the cache: LFS files
// against their sha256, the others against their git blob id (sha1 of
// "blob SIZE\0" and the content) and size. The token (a bearer token read
// from a mode-0600 file) is sent only to the configured endpoint's host:
// like huggingface_hub, which drops the authorization header when the
// download URL's host differs from the Hub's (the CDN URL is signed), a
// redirect to another host never carries it.
//
// The cache lives under one folder (the state dir's hub/ by default), laid
// out like huggingface_hub's so that its tools can read it:
//
//	{datasets|models}--ORG--NAME/
//	  blobs/KEY                  content, KEY = sha256 (LFS) or git blob id
//	  blobs/KEY.incomplete       a partial download, resumed by the next pull
//	  refs/REV                   the commit REV resolved to (REV path-escaped)
//	  trees/COMMIT.json          the file list of COMMIT (for offline use)
//	  snapshots/COMMIT/PATH      the file, a hard link to its blob
//
// Snapshot files are hard links (a symlink when the filesystem refuses), so
// a snapshot folder can be bind-mounted read-only on its own. Offline mode
// reads only the cache and names every missing file.
package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/runtime/auth"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// RepoType is a kind of Hub repository.
type RepoType string

// The repository kinds ttis pulls.
const (
	Model   RepoType = "model"
	Dataset RepoType = "dataset"
)

// Repo names one repository.
type Repo struct {
	Type RepoType `json:"type"`
	ID   string   `json:"id"`
}

func (r Repo) String() string {
	if r.Type == Dataset {
		return "datasets/" + r.ID
	}
	return r.ID
}

// repoIDPattern is the Hub's repository name rule (namespace optional):
// letters, digits, '-', '_' and '.', no "--" or ".." (see huggingface_hub
// utils/_validators.py validate_repo_id).
var repoIDPattern = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// checkRevision rejects a revision that cannot be a git ref or commit
// (it also names a file under refs/).
func checkRevision(rev string) error {
	if rev == "." || rev == ".." || len(rev) > 255 || strings.ContainsFunc(rev, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("revision %q: want a branch, tag or commit", rev)
	}
	return nil
}

// Validate checks the repository kind and name.
func (r Repo) Validate() error {
	if r.Type != Model && r.Type != Dataset {
		return fmt.Errorf("repository type %q: want model or dataset", r.Type)
	}
	if !repoIDPattern.MatchString(r.ID) || strings.Contains(r.ID, "..") || strings.Contains(r.ID, "--") {
		return fmt.Errorf("repository %q: want ORG/NAME of letters, digits, '-', '_' and '.'", r.ID)
	}
	return nil
}

// apiPrefix is the repository's path under /api/.
func (r Repo) apiPrefix() string { return "/api/" + string(r.Type) + "s/" + r.ID }

// filePrefix is the repository's path in file URLs (models have none).
func (r Repo) filePrefix() string {
	if r.Type == Dataset {
		return "/datasets/" + r.ID
	}
	return "/" + r.ID
}

// webURL is the repository's page, where a gated repository's terms are
// accepted.
func (r Repo) webURL(endpoint string) string { return endpoint + r.filePrefix() }

// cacheName is the repository's folder in the cache.
func (r Repo) cacheName() string {
	return string(r.Type) + "s--" + strings.ReplaceAll(r.ID, "/", "--")
}

// Config configures a Client.
type Config struct {
	// Endpoint is the Hub or a mirror (HF_ENDPOINT); empty is the public
	// Hub.
	Endpoint string
	// Token is the bearer token for gated and private repositories; it is
	// never written anywhere and only sent to Endpoint's host.
	Token string `json:"-"`
	// CacheDir is the cache folder (required).
	CacheDir string
	// Offline answers from the cache only; nothing is requested.
	Offline bool
	// HTTPClient carries the requests (a default one when nil); its
	// CheckRedirect is replaced by the client's own.
	HTTPClient *http.Client
	// MaxAttempts bounds the tries of one request (rate limits, server
	// errors, dropped connections); 0 means 5.
	MaxAttempts int
	// MaxRetryWait caps one wait between tries, Retry-After included;
	// 0 means one minute.
	MaxRetryWait time.Duration
	// StallTimeout ends a download that received no byte for that long
	// (the try is then resumed); 0 means two minutes.
	StallTimeout time.Duration
	// Workers is the number of files fetched at once; 0 means 4.
	Workers int
	// Progress, when set, receives download progress (one call at a
	// time, though files are fetched in parallel).
	Progress func(Progress)
	// UserAgent is sent with every request.
	UserAgent string
}

// Progress reports one file's download.
type Progress struct {
	Repo Repo   `json:"repo"`
	Path string `json:"path"`
	// Done and Total are bytes; Resumed the bytes a partial file already
	// had; Cached is set when the file needed no download.
	Done    int64 `json:"done"`
	Total   int64 `json:"total"`
	Resumed int64 `json:"resumed,omitempty"`
	Cached  bool  `json:"cached,omitempty"`
	// Finished is set on the file's last report.
	Finished bool `json:"finished,omitempty"`
}

// Client talks to one Hub endpoint and owns one cache.
type Client struct {
	cfg      Config
	endpoint *url.URL
	http     *http.Client
	// progressMu serializes Progress calls of parallel fetches.
	progressMu sync.Mutex
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub endpoint %q: want an http(s) URL such as %s (HF_ENDPOINT, hf_endpoint)", cfg.Endpoint, DefaultEndpoint)
	}
	if cfg.CacheDir == "" {
		return nil, errors.New("hub: no cache folder (hub_cache, --hub-cache)")
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = time.Minute
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ttis-hub"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 2 * time.Minute
	}
	base := cfg.HTTPClient
	if base == nil {
		// No overall timeout (weights take hours); a silent server is
		// caught by the header timeout here and the stall timeout of
		// downloads.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = time.Minute
		base = &http.Client{Transport: tr}
	}
	hc := *base
	host := u.Host
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// The token belongs to the Hub: a redirect to a CDN (a signed
		// URL) or anywhere else never carries it.
		if req.URL.Host != host {
			req.Header.Del("Authorization")
		}
		return nil
	}
	return &Client{cfg: cfg, endpoint: u, http: &hc}, nil
}

// Endpoint is the Hub the client talks to.
func (c *Client) Endpoint() string { return c.cfg.Endpoint }

// Offline says whether the client answers from the cache only.
func (c *Client) Offline() bool { return c.cfg.Offline }

// CacheDir is the cache folder.
func (c *Client) CacheDir() string { return c.cfg.CacheDir }

// ReadToken reads a bearer token from a secret file (mode 0600 enforced by
// runtime/auth); an empty path means no token.
func ReadToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := auth.ReadSecret(path)
	if err != nil {
		return "", fmt.Errorf("hf token file: %w", err)
	}
	return string(b), nil
}

// DefaultCacheDir is the cache under a state folder.
func DefaultCacheDir(stateDir string) string { return filepath.Join(stateDir, "hub") }

// EndpointFromEnv is HF_ENDPOINT, as huggingface_hub reads it.
func EndpointFromEnv() string { return os.Getenv("HF_ENDPOINT") }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
