package hub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The kinds of Hub failure a caller may act on (errors.Is).
var (
	// ErrGated: the repository asks for accepted terms and a token.
	ErrGated = errors.New("gated repository")
	// ErrUnauthorized: the Hub refused the request (no token, a wrong one,
	// or a private repository).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound: no such repository, revision or file.
	ErrNotFound = errors.New("not found")
	// ErrRateLimited: the Hub kept answering 429 after the allowed tries.
	ErrRateLimited = errors.New("rate limited")
	// ErrChecksum: a downloaded file did not match the Hub's metadata.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrOffline: offline mode, and the cache lacks what was asked.
	ErrOffline = errors.New("not in the cache (offline)")
)

// Error is a Hub answer that was not a success.
type Error struct {
	Op     string // resolve, list, download
	Repo   Repo
	URL    string
	Status int
	// Code and Message are the Hub's X-Error-Code and X-Error-Message
	// headers (or the JSON body's "error").
	Code    string
	Message string
	// Hint says how to fix it.
	Hint string
	kind error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hub %s %s: %s answered %d", e.Op, e.Repo, e.URL, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.kind }

// classify turns a failed answer into an Error with a fix, following
// huggingface_hub's hf_raise_for_status: X-Error-Code GatedRepo is a gated
// repository, RepoNotFound/RevisionNotFound/EntryNotFound say what is
// missing, and a 401 without a code is a private (or absent) repository.
func (c *Client) classify(op string, repo Repo, u string, resp *http.Response, body []byte) *Error {
	e := &Error{Op: op, Repo: repo, URL: u, Status: resp.StatusCode,
		Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
	if e.Message == "" {
		e.Message = bodyMessage(body)
	}
	page := repo.webURL(c.cfg.Endpoint)
	tokenFix := "put a Hugging Face token with read access in a file of mode 0600 and pass it with --hf-token-file (ttisd.toml: hf_token_file)"
	if c.cfg.Token != "" {
		tokenFix = "the configured token was refused: check it is valid and has read access"
	}
	switch {
	case e.Code == "GatedRepo":
		e.kind = ErrGated
		e.Hint = fmt.Sprintf("the repository is gated: request access and accept its terms at %s with your account, then %s", page, tokenFix)
		if c.cfg.Token != "" {
			e.Hint = fmt.Sprintf("the repository is gated and this token's account has no access yet: request it at %s (approval can take a while)", page)
		}
	case e.Code == "RepoNotFound" || (resp.StatusCode == http.StatusUnauthorized && e.Code == ""):
		e.kind = ErrNotFound
		if resp.StatusCode == http.StatusUnauthorized {
			e.kind = ErrUnauthorized
		}
		e.Hint = fmt.Sprintf("no repository %s at %s, or it is private: check the name; if private, %s", repo.ID, c.cfg.Endpoint, tokenFix)
	case e.Code == "RevisionNotFound":
		e.kind = ErrNotFound
		e.Hint = "the revision does not exist: check the branch, tag or commit"
	case e.Code == "EntryNotFound" || resp.StatusCode == http.StatusNotFound:
		e.kind = ErrNotFound
		e.Hint = "the file does not exist at this revision"
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		e.kind = ErrUnauthorized
		e.Hint = tokenFix
	case resp.StatusCode == http.StatusTooManyRequests:
		e.kind = ErrRateLimited
		e.Hint = "the Hub is rate-limiting this client: wait, use a token (higher limits), or a mirror (HF_ENDPOINT)"
	}
	return e
}

// bodyMessage takes a short message out of an error body ({"error": "..."}
// or the first line of text).
func bodyMessage(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	if m, err := parseErrorBody(body); err == nil && m != "" {
		s = m
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const maxLen = 300
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// MissingError lists what offline mode could not find in the cache.
type MissingError struct {
	Repo     Repo
	Revision string
	// Missing are the file paths (or the revision itself when it was
	// never resolved) absent from the cache.
	Missing []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("offline: %s at %s is missing from the cache: %s; pull it while online", e.Repo, e.Revision, strings.Join(e.Missing, ", "))
}

func (e *MissingError) Unwrap() error { return ErrOffline }
