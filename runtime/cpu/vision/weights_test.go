package vision

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/vision/visiontest"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

// TestPullCLIPThenOffline pulls a checkpoint from the fake Hub, opens it,
// and pulls it again offline from the cache alone.
func TestPullCLIPThenOffline(t *testing.T) {
	files, err := visiontest.CLIPCheckpoint(visiontest.TinyCLIP)
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New(t)
	var hf []hubtest.File
	for name, data := range files {
		hf = append(hf, hubtest.File{Path: name, Content: data, LFS: strings.HasSuffix(name, ".safetensors")})
	}
	hf = append(hf, hubtest.File{Path: "pytorch_model.bin", Content: []byte("not pulled"), LFS: true})
	commit := srv.SetBranch("model", CLIPRepoID, "main", hf)
	cache := t.TempDir()
	online, err := hub.New(hub.Config{Endpoint: srv.URL, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := PullCLIP(context.Background(), online, commit)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != len(CLIPFiles) {
		t.Errorf("pulled %d files, want %d", len(snap.Files), len(CLIPFiles))
	}
	c, err := OpenCLIP(snap.Dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	offline, err := hub.New(hub.Config{Endpoint: srv.URL, CacheDir: cache, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PullCLIP(context.Background(), offline, commit); err != nil {
		t.Fatalf("offline from the cache: %v", err)
	}
	// The pinned revision was never pulled: offline names it.
	_, err = PullCLIP(context.Background(), offline, "")
	var miss *hub.MissingError
	if !errors.As(err, &miss) || !strings.Contains(err.Error(), CLIPRevision) {
		t.Errorf("offline without the pinned revision: %v", err)
	}
}
