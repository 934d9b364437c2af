package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/cpu/vision"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// visionNets opens the networks the image and video tasks measure with,
// once per evaluation, and closes them at its end: CLIP from the Hub (the
// pinned checkpoint, or cfg.CLIPRevision), FID's Inception from the file
// the task located and checked.
type visionNets struct {
	ctx      context.Context
	hub      *hub.Client
	revision string

	mu      sync.Mutex
	clip    *vision.CLIP
	clipID  string
	clipErr error
	incs    map[string]*vision.Inception
}

func newVisionNets(ctx context.Context, hc *hub.Client, revision string) *visionNets {
	return &visionNets{ctx: ctx, hub: hc, revision: revision, incs: map[string]*vision.Inception{}}
}

// CLIP pulls (or, offline, finds in the cache) and opens the CLIP
// checkpoint; its identity is repository@commit.
func (v *visionNets) CLIP() (tasks.ImageTextEncoder, string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.clip != nil || v.clipErr != nil {
		return v.clip, v.clipID, v.clipErr
	}
	if v.hub == nil {
		v.clipErr = fmt.Errorf("the CLIP weights (%s) come from the Hugging Face Hub, and no Hub is configured (give the Hub cache, --hub-cache, or its endpoint)", vision.CLIPRepoID)
		return nil, "", v.clipErr
	}
	snap, err := vision.PullCLIP(v.ctx, v.hub, v.revision)
	if err != nil {
		if errors.Is(err, hub.ErrOffline) {
			err = fmt.Errorf("%w; run an image or video eval once while online, with the same Hub cache, to fetch %s at %s", err, vision.CLIPRepoID, vision.CLIPRevision)
		}
		// A cancelled pull is not remembered: a resumed run tries again.
		if v.ctx.Err() == nil {
			v.clipErr = err
		}
		return nil, "", err
	}
	c, err := vision.OpenCLIP(snap.Dir)
	if err != nil {
		v.clipErr = err
		return nil, "", err
	}
	v.clip, v.clipID = c, vision.CLIPRepoID+"@"+snap.Commit
	return v.clip, v.clipID, nil
}

// Inception opens the FID Inception weights at path, which the task has
// located and whose digest it has checked against the published one.
func (v *visionNets) Inception(path string) (tasks.FeatureExtractor, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if x, ok := v.incs[path]; ok {
		return x, nil
	}
	x, err := vision.OpenInceptionUnverified(path)
	if err != nil {
		return nil, err
	}
	v.incs[path] = x
	return x, nil
}

// Close releases every network opened.
func (v *visionNets) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.clip != nil {
		_ = v.clip.Close()
	}
	for _, x := range v.incs {
		_ = x.Close()
	}
}
