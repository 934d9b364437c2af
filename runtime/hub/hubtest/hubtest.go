// Package hubtest is an in-process fake Hugging Face Hub for tests: an
// httptest server on 127.0.0.1 answering the Hub's real URL layout with
// real-shaped JSON (revision info, recursive tree listings with LFS
// metadata and Link pagination), resolve downloads that redirect LFS files
// to a second "CDN" server with a signed-looking URL, Range requests, gated
// repositories, the Hub's X-Error-Code headers, and failures injected per
// path (status, Retry-After, a connection cut after N bytes). It records
// every request so tests can check, for instance, that the CDN never saw
// the token.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of a fake repository; LFS files are listed with LFS
// metadata and downloaded through the CDN.
type File struct {
	Path    string
	Content []byte
	LFS     bool
}

// Request is one request the fake servers received.
type Request struct {
	Server string // "hub" or "cdn"
	Method string
	Path   string // escaped path and query
	Range  string
	// Authorization is the header as received ("" when absent).
	Authorization string
}

// Failure is an injected failure: requests to Server ("hub", "cdn" or ""
// for both) whose escaped path contains PathContains fail Times times (0:
// always).
type Failure struct {
	Server       string
	PathContains string
	Times        int
	// Status is answered with Retry-After (when set); CutAfter > 0 instead
	// serves the real answer and drops the connection after that many body
	// bytes.
	Status     int
	RetryAfter string
	CutAfter   int64
	// Stall > 0 serves the real answer but goes silent for that long after
	// CutAfter bytes (or at once), then drops the connection; the wait
	// ends early when the client hangs up.
	Stall time.Duration
	hits  int
}

// Server is the fake Hub and its CDN.
type Server struct {
	// URL is the Hub endpoint; CDNURL the CDN's root.
	URL    string
	CDNURL string
	// PageSize is the number of tree entries per page (default 1000).
	PageSize int

	hub, cdn *httptest.Server
	mu       sync.Mutex
	repos    map[string]*repo
	blobs    map[string][]byte // sha256 → content
	failures []*Failure
	log      []Request
}

type repo struct {
	typ, id  string
	gated    bool
	tokens   map[string]bool
	branches map[string]string          // name → commit
	commits  map[string]map[string]File // commit → path → file
	order    map[string][]string        // commit → sorted paths
}

// New starts the fake Hub and CDN; they stop when the test ends.
func New(t testing.TB) *Server {
	s := &Server{PageSize: 1000, repos: map[string]*repo{}, blobs: map[string][]byte{}}
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	s.URL, s.CDNURL = s.hub.URL, s.cdn.URL
	t.Cleanup(func() {
		s.hub.Close()
		s.cdn.Close()
	})
	return s
}

func key(typ, id string) string { return typ + ":" + id }

// SetBranch puts files on a branch of a repository (created on first use;
// typ is "model" or "dataset") and returns the new commit id.
func (s *Server) SetBranch(typ, id, branch string, files []File) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[key(typ, id)]
	if r == nil {
		r = &repo{typ: typ, id: id, tokens: map[string]bool{}, branches: map[string]string{}, commits: map[string]map[string]File{}, order: map[string][]string{}}
		s.repos[key(typ, id)] = r
	}
	h := sha1.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", typ, id, branch, len(r.commits))
	byPath := map[string]File{}
	var paths []string
	for _, f := range files {
		fmt.Fprintf(h, "\x00%s\x00%x", f.Path, sha256.Sum256(f.Content))
		byPath[f.Path] = f
		paths = append(paths, f.Path)
		if f.LFS {
			sum := sha256.Sum256(f.Content)
			s.blobs[hex.EncodeToString(sum[:])] = f.Content
		}
	}
	sort.Strings(paths)
	commit := hex.EncodeToString(h.Sum(nil))
	r.commits[commit], r.order[commit], r.branches[branch] = byPath, paths, commit
	return commit
}

// Gate makes a repository gated: files need one of tokens (accepted
// terms); other tokens are refused with 403, none with 401.
func (s *Server) Gate(typ, id string, tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[key(typ, id)]
	r.gated = true
	for _, t := range tokens {
		r.tokens[t] = true
	}
}

// Fail injects a failure.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, &f)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Corrupt replaces the content the CDN serves for an LFS file (the
// listing keeps the original sha256), to test verification.
func (s *Server) Corrupt(content []byte, with []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256(content)
	s.blobs[hex.EncodeToString(sum[:])] = with
}

// record logs r and returns the failure to apply, if any.
func (s *Server) record(server string, r *http.Request) *Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	s.log = append(s.log, Request{Server: server, Method: r.Method, Path: p, Range: r.Header.Get("Range"), Authorization: r.Header.Get("Authorization")})
	for _, f := range s.failures {
		if (f.Server == "" || f.Server == server) && strings.Contains(p, f.PathContains) && (f.Times == 0 || f.hits < f.Times) {
			f.hits++
			return f
		}
	}
	return nil
}

// hubError answers like the Hub: X-Error-Code, X-Error-Message and a JSON
// body {"error": message}.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// cutWriter drops the connection after n body bytes, after a silence of
// stall when set.
type cutWriter struct {
	http.ResponseWriter
	left  int64
	stall time.Duration
	done  <-chan struct{}
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		c.ResponseWriter.Write(b[:c.left])
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		if c.stall > 0 {
			select {
			case <-time.After(c.stall):
			case <-c.done:
			}
		}
		panic(http.ErrAbortHandler)
	}
	c.left -= int64(len(b))
	return c.ResponseWriter.Write(b)
}

func (s *Server) applyFailure(f *Failure, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, bool) {
	if f == nil {
		return w, false
	}
	if f.CutAfter > 0 || f.Stall > 0 {
		return &cutWriter{ResponseWriter: w, left: f.CutAfter, stall: f.Stall, done: r.Context().Done()}, false
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	msg := http.StatusText(f.Status)
	if f.Status == http.StatusTooManyRequests {
		msg = "You have exceeded our hourly quotas for action: resolve. We invite you to retry later."
	}
	hubError(w, f.Status, "", msg)
	return w, true
}

// lookup finds a repository from the path's type and id segments.
func (s *Server) lookup(typ string, segs []string) (*repo, []string) {
	// Ids are "org/name" (two segments) or "name" (one).
	if len(segs) >= 2 {
		if r := s.repos[key(typ, segs[0]+"/"+segs[1])]; r != nil {
			return r, segs[2:]
		}
	}
	if len(segs) >= 1 {
		if r := s.repos[key(typ, segs[0])]; r != nil {
			return r, segs[1:]
		}
	}
	return nil, nil
}

func (r *repo) commitOf(rev string) (string, bool) {
	if c, ok := r.branches[rev]; ok {
		return c, true
	}
	if _, ok := r.commits[rev]; ok {
		return rev, true
	}
	return "", false
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	w, failed := s.applyFailure(s.record("hub", r), w, r)
	if failed {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hubError(w, http.StatusMethodNotAllowed, "", "method not allowed")
		return
	}
	var segs []string
	for _, seg := range strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/") {
		u, err := url.PathUnescape(seg)
		if err != nil {
			hubError(w, http.StatusBadRequest, "", "bad path")
			return
		}
		segs = append(segs, u)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(segs) > 1 && segs[0] == "api" && (segs[1] == "models" || segs[1] == "datasets") {
		s.serveAPI(w, r, strings.TrimSuffix(segs[1], "s"), segs[2:])
		return
	}
	typ := "model"
	if len(segs) > 0 && segs[0] == "datasets" {
		typ, segs = "dataset", segs[1:]
	}
	rp, rest := s.lookup(typ, segs)
	if rp == nil || len(rest) < 3 || rest[0] != "resolve" {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String()+".")
		return
	}
	s.serveResolve(w, r, rp, rest[1], strings.Join(rest[2:], "/"))
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, typ string, segs []string) {
	rp, rest := s.lookup(typ, segs)
	if rp == nil || len(rest) < 2 {
		status := http.StatusUnauthorized
		if r.Header.Get("Authorization") != "" {
			status = http.StatusNotFound
		}
		hubError(w, status, "RepoNotFound", "Repository not found")
		return
	}
	rev := rest[1]
	commit, ok := rp.commitOf(rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	switch rest[0] {
	case "revision":
		s.serveRevision(w, rp, commit)
	case "tree":
		s.serveTree(w, r, rp, commit, strings.Join(rest[2:], "/"))
	default:
		hubError(w, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
	}
}

func (s *Server) serveRevision(w http.ResponseWriter, rp *repo, commit string) {
	var siblings []map[string]string
	for _, p := range rp.order[commit] {
		siblings = append(siblings, map[string]string{"rfilename": p})
	}
	var gated any = false
	if rp.gated {
		gated = "manual"
	}
	author, _, _ := strings.Cut(rp.id, "/")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"_id": "66" + commit[:22], "id": rp.id, "author": author, "sha": commit,
		"lastModified": time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z"),
		"private":      false, "gated": gated, "disabled": false, "downloads": 1234, "likes": 5,
		"tags": []string{"region:us"}, "cardData": map[string]any{}, "siblings": siblings,
	})
}

// pointer is a git-lfs pointer file.
func pointer(content []byte) []byte {
	sum := sha256.Sum256(content)
	return []byte(fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%x\nsize %d\n", sum, len(content)))
}

func gitOID(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) serveTree(w http.ResponseWriter, r *http.Request, rp *repo, commit, dir string) {
	type lfs struct {
		OID         string `json:"oid"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type entry struct {
		Type string `json:"type"`
		OID  string `json:"oid"`
		Size int    `json:"size"`
		Path string `json:"path"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	recursive := r.URL.Query().Get("recursive")
	deep := recursive == "true" || recursive == "True" || recursive == "1"
	var entries []entry
	dirs := map[string]bool{}
	for _, p := range rp.order[commit] {
		if dir != "" && !strings.HasPrefix(p, dir+"/") {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		// Folders come before their files, as the Hub lists them.
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if dir != "" {
				d = dir + "/" + d
			}
			if !dirs[d] && (deep || i == 1) {
				dirs[d] = true
				entries = append(entries, entry{Type: "directory", OID: gitOID([]byte(d)), Size: 0, Path: d})
			}
		}
		if !deep && len(parts) > 1 {
			continue
		}
		f := rp.commits[commit][p]
		e := entry{Type: "file", Size: len(f.Content), Path: p, OID: gitOID(f.Content)}
		if f.LFS {
			ptr := pointer(f.Content)
			sum := sha256.Sum256(f.Content)
			e.OID = gitOID(ptr)
			e.LFS = &lfs{OID: hex.EncodeToString(sum[:]), Size: len(f.Content), PointerSize: len(ptr)}
		}
		entries = append(entries, e)
	}
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		start, _ = strconv.Atoi(c)
	}
	start = min(max(start, 0), len(entries))
	end := min(start+max(s.PageSize, 1), len(entries))
	if end < len(entries) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(end))
		next := *r.URL
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	page := entries[start:end]
	if page == nil {
		page = []entry{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(page)
}

func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, rp *repo, rev, p string) {
	commit, ok := rp.commitOf(rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	f, ok := rp.commits[commit][p]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", p, rev))
		return
	}
	if rp.gated {
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		kind := "dataset"
		if rp.typ == "model" {
			kind = "model"
		}
		switch {
		case r.Header.Get("Authorization") == "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", fmt.Sprintf("Access to %s %s is restricted. You must have access to it and be authenticated to access it. Please log in.", kind, rp.id))
			return
		case !rp.tokens[auth]:
			hubError(w, http.StatusForbidden, "GatedRepo", fmt.Sprintf("Access to %s %s is restricted and you are not in the authorized list. Visit https://huggingface.co/%s to ask for access.", kind, rp.id, rp.id))
			return
		}
	}
	w.Header().Set("X-Repo-Commit", commit)
	if f.LFS {
		sum := sha256.Sum256(f.Content)
		oid := hex.EncodeToString(sum[:])
		w.Header().Set("X-Linked-Etag", `"`+oid+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Content)))
		w.Header().Set("ETag", `"`+gitOID(pointer(f.Content))+`"`)
		// A signed URL on another host, as the Hub's CDN redirects are.
		loc := fmt.Sprintf("%s/repos/%s/%s?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=%x", s.CDNURL, url.PathEscape(rp.id), oid, sha1.Sum([]byte(oid)))
		http.Redirect(w, r, loc, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitOID(f.Content)+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.Content))
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	w, failed := s.applyFailure(s.record("cdn", r), w, r)
	if failed {
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	s.mu.Lock()
	content, ok := s.blobs[parts[len(parts)-1]]
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("X-Amz-Signature") == "" {
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
}
