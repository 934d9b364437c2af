package catalog

import (
	"fmt"
	"strings"
)

// Media model types (Spec.ModelType) and the tt-media-server service each
// is served by.
var mediaServices = map[string]string{
	"IMAGE":          "image",
	"AUDIO":          "audio",
	"TEXT_TO_SPEECH": "text_to_speech",
	"CNN":            "cnn",
	"EMBEDDING":      "embedding",
	"VIDEO":          "video",
}

// IsMedia reports whether the spec is a media model: one tt-media-server
// serves (images, speech, CNNs, embeddings, video) rather than an LLM.
func (s *Spec) IsMedia() bool { _, ok := mediaServices[s.ModelType]; return ok }

// MediaService is tt-media-server's MODEL_SERVICE for a media spec
// ("image", "audio", "text_to_speech", "cnn", "embedding", "video"), or ""
// for an LLM.
func (s *Spec) MediaService() string { return mediaServices[s.ModelType] }

// mediaRunners maps a media model's name (tt-media-server's MODEL, the HF
// repo basename) to its MODEL_RUNNER, after tt-media-server's
// INFERENCE_MODEL_RUNNER_TO_MODEL_NAMES_MAP (config/constants.py). A
// spec's env may name another runner (MODEL_RUNNER), which wins.
var mediaRunners = map[string]string{
	"stable-diffusion-xl-base-1.0":           "tt-sdxl-trace",
	"stable-diffusion-xl-base-1.0-img-2-img": "tt-sdxl-image-to-image",
	"stable-diffusion-xl-1.0-inpainting-0.1": "tt-sdxl-edit",
	"stable-diffusion-3.5-large":             "tt-sd3.5",
	"FLUX.1-dev":                             "tt-flux.1-dev",
	"FLUX.1-schnell":                         "tt-flux.1-schnell",
	"Motif-Image-6B-Preview":                 "tt-motif-image-6b-preview",
	"Qwen-Image":                             "tt-qwen-image",
	"Qwen-Image-2512":                        "tt-qwen-image-2512",
	"Z-Image-Turbo":                          "tt-z-image-turbo",
	"mochi-1-preview":                        "tt-mochi-1",
	"Wan2.2-T2V-A14B-Diffusers":              "tt-wan2.2",
	"whisper-large-v3":                       "tt-whisper",
	"distil-large-v3":                        "tt-whisper",
	"speecht5_tts":                           "tt-speecht5-tts",
	"resnet-50":                              "tt-xla-resnet",
	"vovnet":                                 "tt-xla-vovnet",
	"mobilenetv2":                            "tt-xla-mobilenetv2",
	"efficientnet":                           "tt-xla-efficientnet",
	"segformer":                              "tt-xla-segformer",
	"unet":                                   "tt-xla-unet",
	"vit":                                    "tt-xla-vit",
	"yolox_nano":                             "tt-xla-yolox-nano",
	"bge-large-en-v1.5":                      "bge_large_en_v1_5",
	"bge-m3":                                 "bge-m3",
	"Qwen3-Embedding-8B":                     "qwen_embedding_8b",
	"Qwen3-Embedding-4B":                     "vllmforge_qwen_embedding",
	"Qwen3-Embedding-0.6B":                   "vllmforge_qwen_embedding_0_6b",
}

// embeddingDims are the vector lengths of the catalog's embedding models
// (their HF configs' hidden_size); Qwen3-Embedding models are trained for
// shorter (Matryoshka) vectors too.
var embeddingDims = map[string]struct {
	dims       int
	matryoshka bool
}{
	"bge-large-en-v1.5":    {1024, false},
	"bge-m3":               {1024, false},
	"Qwen3-Embedding-8B":   {4096, true},
	"Qwen3-Embedding-4B":   {2560, true},
	"Qwen3-Embedding-0.6B": {1024, true},
}

// EmbeddingDimensions returns an embedding model's vector length and
// whether it may be shortened; ok is false for other models.
func EmbeddingDimensions(model string) (dims int, matryoshka, ok bool) {
	d, ok := embeddingDims[model]
	return d.dims, d.matryoshka, ok
}

// MediaRunner returns the MODEL_RUNNER that serves a media spec.
func MediaRunner(s *Spec) (string, error) {
	if r := s.Env["MODEL_RUNNER"]; r != "" {
		return r, nil
	}
	if r, ok := mediaRunners[s.ModelName]; ok {
		return r, nil
	}
	return "", fmt.Errorf("%s is not a media model tt-media-server knows a runner for", s.ModelName)
}

// MediaLayout returns how a media spec's runner is laid out on its device
// (mesh of one worker, worker count, batch size): the runner's
// ModelConfigs row, or, for a device that table does not list, one worker
// over the whole device.
func MediaLayout(s *Spec) (MediaConfig, error) {
	runner, err := MediaRunner(s)
	if err != nil {
		return MediaConfig{}, err
	}
	if m, err := Media(runner, s.Device); err == nil {
		return m, nil
	}
	dev, err := Device(s.Device)
	if err != nil {
		return MediaConfig{}, err
	}
	mesh := [2]int{1, max(dev.Chips, 1)}
	if r, c, ok := parseMesh(dev.Mesh); ok {
		mesh = [2]int{r, c}
	}
	return MediaConfig{Runner: runner, Device: s.Device, Mesh: mesh, Workers: 1, MaxBatchSize: 1}, nil
}

// parseMesh reads "2x4" or "(2, 4)".
func parseMesh(s string) (int, int, bool) {
	s = strings.NewReplacer("(", "", ")", "", " ", "", ",", "x").Replace(s)
	var r, c int
	if _, err := fmt.Sscanf(s, "%dx%d", &r, &c); err != nil || r <= 0 || c <= 0 {
		return 0, 0, false
	}
	return r, c, true
}
