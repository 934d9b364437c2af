package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/units/hardened"
)

// Cache stores completed requests on disk so that an interrupted run
// resumes where it stopped. Each entry is one file named by the hash of
// (task, document, request, model, API), written to a temporary file and
// renamed, so an entry is either complete or absent.
type Cache struct {
	dir string
}

// OpenCache uses dir (created when missing).
func OpenCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("eval cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

type cacheEntry struct {
	Response evalsuite.Response `json:"response"`
	Raw      json.RawMessage    `json:"raw,omitempty"`
}

// Key hashes what determines a request's answer.
func Key(task, docHash, model, api string, inst evalsuite.Instance) string {
	b, _ := json.Marshal(struct {
		Task, Doc, Model, API string
		Inst                  evalsuite.Instance
	}{task, docHash, model, api, inst})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (c *Cache) path(key string) string { return filepath.Join(c.dir, key[:2], key+".json") }

// maxEntryBytes bounds one cache entry (one answer, with the server's raw
// reply); a bigger file is damaged.
const maxEntryBytes = 64 << 20

// Get returns a stored response; ok is false when there is none. A
// damaged entry counts as absent (the request is sent again); so does one
// that is not a regular file within maxEntryBytes: the cache lives in the
// results store, and is read the hardened way (units/hardened).
func (c *Cache) Get(key string) (evalsuite.Response, json.RawMessage, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := hardened.ReadFile(ctx, c.path(key), maxEntryBytes)
	if err != nil {
		return evalsuite.Response{}, nil, false
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil {
		return evalsuite.Response{}, nil, false
	}
	return e.Response, e.Raw, true
}

// Put stores a response atomically.
func (c *Cache) Put(key string, resp evalsuite.Response, raw json.RawMessage) error {
	b, err := json.Marshal(cacheEntry{Response: resp, Raw: raw})
	if err != nil {
		return fmt.Errorf("eval cache: %w", err)
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("eval cache: %w", err)
	}
	if err := renameio.WriteFile(p, b, 0o644, renameio.WithTempDir(filepath.Dir(p))); err != nil {
		return fmt.Errorf("eval cache: %w", err)
	}
	return nil
}
