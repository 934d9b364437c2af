package vision

import (
	"context"
	"errors"
	"image"
)

// FeatureDim is the length of an Inception feature vector (pool_3).
const FeatureDim = 2048

// Inception is Inception-v3 in the variant FID is defined with
// (pytorch-fid's InceptionV3 with use_fid_inception=True, as
// tt-inference-server's utils/sdxl_accuracy_utils/inception.py copies it):
// torchvision's inception_v3 layers with FIDInceptionA/C/E_1/E_2 blocks
// (average pools that do not count the padding; a max pool in the last
// block), batch norm folded into the convolutions (eps 0.001). It is safe for
// concurrent use; calls run one at a time, each on all of the machine's
// threads.
type Inception struct {
	// filled by OpenInception
}

// OpenInception loads the FID Inception weights from path, which must be
// the published file InceptionFile (sha256 InceptionSHA256, from
// InceptionURL): a PyTorch state_dict. A missing file or one with another
// digest is an error that names the file, where it is published and its
// sha256.
func OpenInception(path string) (*Inception, error) {
	return nil, errors.New("vision: OpenInception: not built yet")
}

// Features returns each image's FeatureDim-long pool_3 feature, computed
// the way the reference's get_activations does with batch size 1: the
// image as float RGB in [0, 1] at its own size, bilinearly resized to
// 299×299 (align_corners=False, no antialiasing), scaled to [-1, 1]. It
// stops between images when ctx is cancelled.
func (x *Inception) Features(ctx context.Context, imgs []image.Image) ([][]float32, error) {
	return nil, errors.New("vision: Inception.Features: not built yet")
}

// Close releases the weights and the worker threads.
func (x *Inception) Close() error { return nil }
