package vision

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/vision/visiontest"
)

func writeTestInception(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inception.pth")
	if err := visiontest.WriteInception(path, visiontest.InceptionTensors()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInceptionMatchesReference runs tt-inference-server's own FID
// InceptionV3 golden (full architecture, deterministic weights, images at
// three sizes through its ToTensor and resize) against this one: blocks
// 0-2 sampled, and the 2048-d features, within 1e-4 relative.
func TestInceptionMatchesReference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the full network on three images")
	}
	ref := loadReference(t, "inception_reference")
	if !reflect.DeepEqual(ref.Spec, visiontest.InceptionTensors()) {
		t.Fatal("visiontest.InceptionTensors() differs from the weights the reference was run on")
	}
	x, err := OpenInceptionUnverified(writeTestInception(t))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	traced := map[string][]float32{}
	x.trace = func(name string, v []float32) { traced[name] = append([]float32(nil), v...) }
	for k, s := range ref.Images {
		feats, err := x.Features(context.Background(), []image.Image{patternImage(s.W, s.H)})
		if err != nil {
			t.Fatal(err)
		}
		if len(feats[0]) != FeatureDim {
			t.Fatalf("%d features, want %d", len(feats[0]), FeatureDim)
		}
		for _, b := range []string{"block0", "block1", "block2"} {
			name := "image" + string(rune('0'+k)) + "." + b
			want, _ := ref.array(t, name)
			meta := ref.raw(t, name)
			c, h, w := meta.CHW[0], meta.CHW[1], meta.CHW[2]
			got := make([]float32, len(want))
			for i := range got {
				flat := i * meta.Step // an NCHW index; the trace is HWC
				ch, rest := flat/(h*w), flat%(h*w)
				got[i] = traced[b][rest*c+ch]
			}
			if e := relErr(got, want); e > 1e-4 {
				t.Errorf("%s: relative error %.2g", name, e)
			} else {
				t.Logf("%s: relative error %.2g", name, e)
			}
		}
		want, _ := ref.array(t, "image"+string(rune('0'+k))+".features")
		if e := relErr(feats[0], want); e > 1e-4 {
			t.Errorf("image %d (%dx%d) features: relative error %.2g", k, s.W, s.H, e)
		} else {
			t.Logf("image %d (%dx%d) features: relative error %.2g", k, s.W, s.H, e)
		}
	}
}

func TestOpenInceptionNamesThePublishedFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), InceptionFile)
	_, err := OpenInception(missing)
	for _, want := range []string{missing, InceptionFile, InceptionURL, InceptionSHA256} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing file: %v does not name %s", err, want)
		}
	}
	other := filepath.Join(t.TempDir(), "other.pth")
	if err := os.WriteFile(other, []byte("not the weights"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenInception(other)
	if err == nil || !strings.Contains(err.Error(), "sha256 ") || !strings.Contains(err.Error(), InceptionSHA256) {
		t.Errorf("wrong file: %v", err)
	}
}

func TestInceptionBadWeights(t *testing.T) {
	ts := visiontest.InceptionTensors()
	for _, c := range []struct {
		name string
		edit func([]visiontest.Tensor) []visiontest.Tensor
		want string
	}{
		{"missing", func(ts []visiontest.Tensor) []visiontest.Tensor { return ts[1:] }, "no tensor"},
		{"extra", func(ts []visiontest.Tensor) []visiontest.Tensor {
			return append(ts, visiontest.Tensor{Name: "AuxLogits.fc.weight", Shape: []int{2}})
		}, "AuxLogits.fc.weight"},
		{"kernel", func(ts []visiontest.Tensor) []visiontest.Tensor {
			out := append([]visiontest.Tensor(nil), ts...)
			for i := range out {
				if out[i].Name == "Mixed_5b.branch5x5_2.conv.weight" {
					out[i].Shape = []int{64, 48, 3, 3}
				}
			}
			return out
		}, "Mixed_5b.branch5x5_2.conv.weight\" has shape [64 48 3 3], want [64 48 5 5]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.pth")
			if err := visiontest.WriteInception(path, c.edit(ts)); err != nil {
				t.Fatal(err)
			}
			_, err := OpenInceptionUnverified(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want an error naming %s with %q", err, path, c.want)
			}
		})
	}
}
