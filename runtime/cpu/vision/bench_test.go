package vision

import (
	"context"
	"image"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/vision/visiontest"
)

// viTB32 is OpenAI's CLIP ViT-B/32 shape: the benchmark runs the real
// network's arithmetic on visiontest's deterministic weights.
var viTB32 = visiontest.CLIPSize{Embed: 512, VisionWidth: 768, VisionHeads: 12, VisionLayers: 12, Patch: 32, Image: 224,
	TextWidth: 512, TextHeads: 8, TextLayers: 12}

// BenchmarkCLIPImages measures CLIP image embeddings of 1024×1024 images
// (SDXL's output size), preprocessing included, in batches of imageBatch.
func BenchmarkCLIPImages(b *testing.B) {
	dir := b.TempDir()
	if err := visiontest.WriteCLIP(dir, viTB32); err != nil {
		b.Fatal(err)
	}
	c, err := OpenCLIP(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	imgs := make([]image.Image, imageBatch)
	for i := range imgs {
		imgs[i] = patternImage(1024, 1024)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.EncodeImages(context.Background(), imgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(imgs))/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkCLIPTexts measures CLIP text embeddings of a COCO caption.
func BenchmarkCLIPTexts(b *testing.B) {
	dir := b.TempDir()
	if err := visiontest.WriteCLIP(dir, viTB32); err != nil {
		b.Fatal(err)
	}
	c, err := OpenCLIP(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	texts := []string{"A man riding a wave on top of a surfboard."}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.EncodeTexts(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}

// BenchmarkInceptionImages measures FID features of 1024×1024 images,
// the resize to 299 included.
func BenchmarkInceptionImages(b *testing.B) {
	x, err := OpenInceptionUnverified(writeTestInception(b))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	imgs := []image.Image{patternImage(1024, 1024)}
	b.ResetTimer()
	for b.Loop() {
		if _, err := x.Features(context.Background(), imgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}
