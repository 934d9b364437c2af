package vision

import (
	"context"
	"errors"
	"image"
	"math"
)

// CLIP is OpenAI's CLIP (ViT image tower, causal text tower, BPE
// tokenizer) as tt-inference-server scores images with it: see the package
// comment for the exact model and preprocessing. It is safe for concurrent
// use; calls run one at a time, each on all of the machine's threads.
type CLIP struct {
	// filled by OpenCLIP
}

// OpenCLIP loads a CLIP checkpoint in the layout transformers publishes
// (the folder PullCLIP returns): config.json, model.safetensors, vocab.json
// and merges.txt (preprocessor_config.json and the tokenizer's JSON files
// may be there; they are not read, because the reference's preprocessing
// is open_clip's, fixed in code). The weights are mapped, not copied.
func OpenCLIP(dir string) (*CLIP, error) {
	return nil, errors.New("vision: OpenCLIP: not built yet")
}

// EncodeImages returns each image's image embedding: the projected class
// token of the vision tower (open_clip's encode_image), not normalised,
// computed after the reference's resize, crop and normalisation. It stops
// between images when ctx is cancelled.
func (c *CLIP) EncodeImages(ctx context.Context, imgs []image.Image) ([][]float32, error) {
	return nil, errors.New("vision: CLIP.EncodeImages: not built yet")
}

// EncodeTexts returns each text's text embedding: the projected final
// state at the end token (open_clip's encode_text), not normalised, after
// open_clip.tokenize's cleaning, BPE and truncation to 77 tokens.
func (c *CLIP) EncodeTexts(ctx context.Context, texts []string) ([][]float32, error) {
	return nil, errors.New("vision: CLIP.EncodeTexts: not built yet")
}

// Close releases the weights and the worker threads.
func (c *CLIP) Close() error { return nil }

// Score is the CLIP score of one image and one text embedding as
// tt-inference-server computes it (sdxl_accuracy_utils.calculate_metrics:
// 100 * CLIPEncoder.get_clip_score): 100 × the cosine of the two vectors.
// Unlike torchmetrics' CLIPScore it is not floored at 0; a pair of
// unrelated vectors may score below 0. A zero vector scores NaN, as the
// reference's division by a zero norm does. It panics when the lengths
// differ (a programming error).
func Score(img, txt []float32) float64 {
	if len(img) != len(txt) {
		panic("vision: Score of vectors of different lengths")
	}
	var dot, ni, nt float64
	for i := range img {
		a, b := float64(img[i]), float64(txt[i])
		dot += a * b
		ni += a * a
		nt += b * b
	}
	return 100 * dot / (math.Sqrt(ni) * math.Sqrt(nt))
}
