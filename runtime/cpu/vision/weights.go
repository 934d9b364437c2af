package vision

import (
	"context"
	"fmt"

	"github.com/ttis-dev/ttis/runtime/hub"
)

// The CLIP checkpoint: OpenAI's ViT-B/32 weights (the "openai" pretrained
// tag open_clip loads for "ViT-B/32") as transformers publishes them on the
// Hub, pinned to one commit so that a score is reproducible.
const (
	CLIPRepoID   = "openai/clip-vit-base-patch32"
	CLIPRevision = "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268"
)

// CLIPFiles are the files of CLIPRepoID that OpenCLIP reads.
var CLIPFiles = []string{"config.json", "merges.txt", "model.safetensors", "vocab.json"}

// PullCLIP makes the CLIP checkpoint CLIPRepoID at revision (empty: the
// pinned CLIPRevision; tests pass their fake Hub's commit) present and
// verified in c's cache, offline finding it there or naming what is
// missing, and returns the snapshot; OpenCLIP(snapshot.Dir) loads it.
func PullCLIP(ctx context.Context, c *hub.Client, revision string) (*hub.Snapshot, error) {
	if revision == "" {
		revision = CLIPRevision
	}
	snap, err := c.Pull(ctx, hub.Repo{Type: hub.Model, ID: CLIPRepoID}, hub.PullOptions{
		Revision: revision,
		Include:  CLIPFiles,
	})
	if err != nil {
		return nil, fmt.Errorf("CLIP weights %s at %s: %w", CLIPRepoID, revision, err)
	}
	return snap, nil
}

// The FID Inception weights: pytorch-fid's port of TensorFlow's
// inception-2015-12-05 graph, which tt-inference-server downloads from
// InceptionURL (utils/sdxl_accuracy_utils/inception.py, FID_WEIGHTS_URL).
// They are not on the Hugging Face Hub, so the operator places the file;
// its name carries the first 8 hex digits of its sha256, as torch.hub
// names checked files.
const (
	InceptionFile   = "pt_inception-2015-12-05-6726825d.pth"
	InceptionURL    = "https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/" + InceptionFile
	InceptionSHA256 = "6726825d0af5f729cebd5821db510b11b1cfad8faad88a03f1befd49fb9129b2"
)
