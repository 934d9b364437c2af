// Package visiontest makes small, deterministic checkpoints of the
// networks runtime/cpu/vision runs, for tests that need real files without
// the real weights: a CLIP folder in transformers' layout (with CLIP's real
// BPE vocabulary) and, in inception.go, a FID Inception state_dict in
// PyTorch's file format. Their values come from Uniform, which the golden
// files' generator computes the same way, so tests can compare with
// PyTorch run on the same weights.
package visiontest

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/clipbpe"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/safetensors"
)

// clipMerges is CLIP's merges.txt (the 48894 merges of open_clip's
// bpe_simple_vocab_16e6.txt.gz), gzipped.
//
//go:embed clip_merges.txt.gz
var clipMerges []byte

// Uniform returns n deterministic values in [-1, 1) for the tensor called
// name: splitmix64 of FNV-1a(name) + i·0x9E3779B97F4A7C15, its top 24
// bits scaled.
func Uniform(name string, n int) []float32 {
	seed := uint64(0xcbf29ce484222325)
	for i := 0; i < len(name); i++ {
		seed ^= uint64(name[i])
		seed *= 0x100000001b3
	}
	out := make([]float32, n)
	for i := range out {
		z := seed + uint64(i)*0x9E3779B97F4A7C15
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		out[i] = float32(float64(z>>40)/float64(1<<23) - 1)
	}
	return out
}

// Tensor describes one generated tensor: Offset + Scale·Uniform(Name).
type Tensor struct {
	Name   string  `json:"name"`
	Shape  []int   `json:"shape"`
	Offset float64 `json:"offset"`
	Scale  float64 `json:"scale"`
}

// Values computes the tensor's values.
func (t Tensor) Values() []float32 {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	u := Uniform(t.Name, n)
	for i := range u {
		u[i] = float32(float32(t.Scale)*u[i]) + float32(t.Offset) // float32 arithmetic, as numpy computes it
	}
	return u
}

// CLIPSize is the shape of a CLIP checkpoint (OpenAI's ViT-B/32 is
// {512, 768, 12, 12, 32, 224, 512, 8, 12}).
type CLIPSize struct {
	Embed                                  int
	VisionWidth, VisionHeads, VisionLayers int
	Patch, Image                           int
	TextWidth, TextHeads, TextLayers       int
}

// TinyCLIP is small enough to run in a test in milliseconds, with the
// real image size, patch size, context length and vocabulary.
var TinyCLIP = CLIPSize{Embed: 24, VisionWidth: 64, VisionHeads: 4, VisionLayers: 2, Patch: 32, Image: 224, TextWidth: 32, TextHeads: 2, TextLayers: 2}

const (
	clipVocab   = 49408
	clipContext = 77
)

// CLIPTensors lists the tensors of a checkpoint of size s in
// transformers' names: layer norms near 1, biases near 0, dense weights
// scaled by 1.7/√fan-in so activations keep their size through the layers.
func CLIPTensors(s CLIPSize) []Tensor {
	var ts []Tensor
	add := func(name string, shape []int, offset, scale float64) {
		ts = append(ts, Tensor{Name: name, Shape: shape, Offset: offset, Scale: scale})
	}
	dense := func(name string, out, in int) { add(name, []int{out, in}, 0, 1.7/math.Sqrt(float64(in))) }
	norm := func(name string, d int) {
		add(name+".weight", []int{d}, 1, 0.2)
		add(name+".bias", []int{d}, 0, 0.1)
	}
	g := s.Image / s.Patch
	add("vision_model.embeddings.patch_embedding.weight", []int{s.VisionWidth, 3, s.Patch, s.Patch}, 0, 1.7/math.Sqrt(float64(3*s.Patch*s.Patch)))
	add("vision_model.embeddings.class_embedding", []int{s.VisionWidth}, 0, 0.5)
	add("vision_model.embeddings.position_embedding.weight", []int{g*g + 1, s.VisionWidth}, 0, 0.5)
	norm("vision_model.pre_layrnorm", s.VisionWidth)
	norm("vision_model.post_layernorm", s.VisionWidth)
	dense("visual_projection.weight", s.Embed, s.VisionWidth)
	add("text_model.embeddings.token_embedding.weight", []int{clipVocab, s.TextWidth}, 0, 0.5)
	add("text_model.embeddings.position_embedding.weight", []int{clipContext, s.TextWidth}, 0, 0.5)
	norm("text_model.final_layer_norm", s.TextWidth)
	dense("text_projection.weight", s.Embed, s.TextWidth)
	add("logit_scale", []int{}, 4.6052, 0)
	for _, tw := range []struct {
		tower string
		w, l  int
	}{{"vision_model", s.VisionWidth, s.VisionLayers}, {"text_model", s.TextWidth, s.TextLayers}} {
		for i := 0; i < tw.l; i++ {
			p := fmt.Sprintf("%s.encoder.layers.%d.", tw.tower, i)
			norm(p+"layer_norm1", tw.w)
			norm(p+"layer_norm2", tw.w)
			for _, n := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
				dense(p+"self_attn."+n+".weight", tw.w, tw.w)
				add(p+"self_attn."+n+".bias", []int{tw.w}, 0, 0.1)
			}
			dense(p+"mlp.fc1.weight", 4*tw.w, tw.w)
			add(p+"mlp.fc1.bias", []int{4 * tw.w}, 0, 0.1)
			dense(p+"mlp.fc2.weight", tw.w, 4*tw.w)
			add(p+"mlp.fc2.bias", []int{tw.w}, 0, 0.1)
		}
	}
	return ts
}

// CLIPCheckpoint returns the files of a checkpoint of size s: config.json,
// model.safetensors, vocab.json and merges.txt.
func CLIPCheckpoint(s CLIPSize) (map[string][]byte, error) {
	cfg := map[string]any{
		"architectures":  []string{"CLIPModel"},
		"model_type":     "clip",
		"projection_dim": s.Embed,
		"vision_config": map[string]any{"hidden_size": s.VisionWidth, "intermediate_size": 4 * s.VisionWidth,
			"num_attention_heads": s.VisionHeads, "num_hidden_layers": s.VisionLayers, "image_size": s.Image,
			"patch_size": s.Patch, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5},
		"text_config": map[string]any{"hidden_size": s.TextWidth, "intermediate_size": 4 * s.TextWidth,
			"num_attention_heads": s.TextHeads, "num_hidden_layers": s.TextLayers, "vocab_size": clipVocab,
			"max_position_embeddings": clipContext, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5},
	}
	files := map[string][]byte{}
	var err error
	if files["config.json"], err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return nil, err
	}
	tensors := map[string]safetensors.F32Tensor{}
	for _, t := range CLIPTensors(s) {
		tensors[t.Name] = safetensors.F32Tensor{Shape: t.Shape, Data: t.Values()}
	}
	var b bytes.Buffer
	if err := safetensors.Write(&b, tensors, map[string]string{"format": "pt"}); err != nil {
		return nil, err
	}
	files["model.safetensors"] = b.Bytes()
	zr, err := gzip.NewReader(bytes.NewReader(clipMerges))
	if err != nil {
		return nil, err
	}
	if files["merges.txt"], err = io.ReadAll(zr); err != nil {
		return nil, err
	}
	if files["vocab.json"], err = json.Marshal(clipbpe.VocabFromMerges(files["merges.txt"])); err != nil {
		return nil, err
	}
	return files, nil
}

// WriteCLIP writes a checkpoint of size s into dir.
func WriteCLIP(dir string, s CLIPSize) error {
	files, err := CLIPCheckpoint(s)
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
