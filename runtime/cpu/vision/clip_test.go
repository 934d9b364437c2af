package vision

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/vision/visiontest"
)

// reference is a golden file made by running the reference's own code
// (open_clip 2.26.1, pytorch-fid's InceptionV3 as tt-inference-server
// copies it) under PyTorch on visiontest's deterministic weights:
// testdata/NAME.json describes the arrays stored in testdata/NAME.f32.
type reference struct {
	Spec   []visiontest.Tensor
	Images []struct{ W, H int }
	Texts  []string
	Tokens [][]int
	Scores [][]float64
	Arrays map[string]refArray
	data   []byte
}

type refArray struct {
	Shape  []int
	Offset int
	// CHW and Step describe a sampled NCHW activation: every Step-th
	// element of a C×H×W array.
	CHW  []int
	Step int
}

func (r *reference) raw(t *testing.T, name string) refArray {
	t.Helper()
	a, ok := r.Arrays[name]
	if !ok {
		t.Fatalf("reference has no array %q", name)
	}
	return a
}

func loadReference(t *testing.T, name string) *reference {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	r := &reference{}
	if err := json.Unmarshal(raw, r); err != nil {
		t.Fatal(err)
	}
	if r.data, err = os.ReadFile("testdata/" + name + ".f32"); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *reference) array(t *testing.T, name string) ([]float32, []int) {
	t.Helper()
	a, ok := r.Arrays[name]
	if !ok {
		t.Fatalf("reference has no array %q", name)
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.data[a.Offset+4*i:]))
	}
	return out, a.Shape
}

// relErr is max|got-want| / max|want|: the error relative to the array's
// scale, which this package is held to at 1e-4.
func relErr(got, want []float32) float64 {
	var d, m float64
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(want[i])))
		m = math.Max(m, math.Abs(float64(want[i])))
	}
	return d / m
}

// patternImage is the test image of internal/imgproc's golden files.
func patternImage(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := img.Pix[img.PixOffset(x, y):]
			p[0] = uint8((x*7 + y*13 + (x*y)%31) % 256)
			p[1] = uint8((x*x + 3*y) % 256)
			p[2] = uint8(((x^y)*5 + 17) % 256)
			p[3] = 255
		}
	}
	return img
}

func TestCLIPMatchesOpenCLIPLayerByLayer(t *testing.T) {
	ref := loadReference(t, "clip_tiny_reference")
	if !reflect.DeepEqual(ref.Spec, visiontest.CLIPTensors(visiontest.TinyCLIP)) {
		t.Fatal("visiontest.CLIPTensors(TinyCLIP) differs from the weights the reference was run on")
	}
	dir := t.TempDir()
	if err := visiontest.WriteCLIP(dir, visiontest.TinyCLIP); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCLIP(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	traced := map[string][]float32{}
	c.setTrace(func(name string, x []float32) { traced[name] = append(traced[name], x...) })
	const tol = 1e-4
	imgs := make([]image.Image, len(ref.Images))
	for i, s := range ref.Images {
		imgs[i] = patternImage(s.W, s.H)
	}
	embI, err := c.EncodeImages(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got []float32) {
		t.Helper()
		want, _ := ref.array(t, name)
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
		}
		if e := relErr(got, want); e > tol || math.IsNaN(e) {
			t.Errorf("%s: relative error %.2g, more than %g", name, e, tol)
		} else {
			t.Logf("%s: relative error %.2g", name, e)
		}
	}
	check("vision.ln_pre", traced["vision.ln_pre"])
	check("vision.layer.0", traced["vision.layer.0"])
	check("vision.layer.1", traced["vision.layer.1"])
	check("vision.embeds", flat(embI))

	// Tokens first (the tokenizer has its own golden file; this pins the
	// texts used here), then the text tower, whose traces cover only the
	// positions up to the end token.
	for i, txt := range ref.Texts {
		if got := c.tok.Tokenize(txt); !reflect.DeepEqual(got, ref.Tokens[i]) {
			t.Fatalf("tokens of %q:\n got %v\nwant %v", txt, got, ref.Tokens[i])
		}
	}
	clear(traced)
	embT, err := c.EncodeTexts(context.Background(), ref.Texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range []string{"text.layer.0", "text.layer.1"} {
		want, shape := ref.array(t, layer)
		var prefix []float32
		for i, toks := range ref.Tokens {
			n := argmax(toks) + 1
			prefix = append(prefix, want[i*shape[1]*shape[2]:(i*shape[1]+n)*shape[2]]...)
		}
		if e := relErr(traced[layer], prefix); len(traced[layer]) != len(prefix) || e > tol {
			t.Errorf("%s: relative error %.2g over %d values (want %d)", layer, e, len(traced[layer]), len(prefix))
		}
	}
	check("text.embeds", flat(embT))
	for i := range embI {
		for j := range embT {
			got, want := Score(embI[i], embT[j]), ref.Scores[i][j]
			if math.Abs(got-want) > 1e-3 {
				t.Errorf("score of image %d and text %d: %.5f, reference %.5f", i, j, got, want)
			}
		}
	}
}

func argmax(ids []int) int {
	at := 0
	for i, id := range ids {
		if id > ids[at] {
			at = i
		}
	}
	return at
}

func flat(v [][]float32) []float32 {
	var out []float32
	for _, r := range v {
		out = append(out, r...)
	}
	return out
}

func TestCLIPBadCheckpoints(t *testing.T) {
	files, err := visiontest.CLIPCheckpoint(visiontest.TinyCLIP)
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, edit func(map[string][]byte)) string {
		dir := t.TempDir()
		fs := map[string][]byte{}
		for k, v := range files {
			fs[k] = v
		}
		edit(fs)
		for k, v := range fs {
			if err := os.WriteFile(dir+"/"+k, v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, c := range []struct {
		name string
		edit func(map[string][]byte)
		want string
	}{
		{"no weights", func(fs map[string][]byte) { delete(fs, "model.safetensors") }, "model.safetensors"},
		{"no vocab", func(fs map[string][]byte) { delete(fs, "vocab.json") }, "vocab.json"},
		{"bad act", func(fs map[string][]byte) {
			fs["config.json"] = []byte(strings.Replace(string(fs["config.json"]), `"quick_gelu"`, `"relu"`, 1))
		}, `hidden_act "relu"`},
		{"wrong width", func(fs map[string][]byte) {
			fs["config.json"] = []byte(strings.Replace(string(fs["config.json"]), `"hidden_size": 64`, `"hidden_size": 128`, 1))
		}, `has shape [64 3 32 32], want [128 3 32 32]`},
		{"config json", func(fs map[string][]byte) { fs["config.json"] = []byte("{") }, "config.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenCLIP(write(t, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestCLIPCancelAndClose(t *testing.T) {
	dir := t.TempDir()
	if err := visiontest.WriteCLIP(dir, visiontest.TinyCLIP); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCLIP(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.EncodeTexts(ctx, []string{"x"}); err == nil {
		t.Error("EncodeTexts ran with a cancelled context")
	}
	if _, err := c.EncodeImages(context.Background(), []image.Image{image.NewNRGBA(image.Rect(0, 0, 0, 0))}); err == nil || !strings.Contains(err.Error(), "image 0 is empty") {
		t.Errorf("empty image: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EncodeTexts(context.Background(), []string{"x"}); err == nil {
		t.Error("EncodeTexts ran after Close")
	}
}

func TestScore(t *testing.T) {
	if got := Score([]float32{1, 0}, []float32{1, 0}); got != 100 {
		t.Errorf("identical: %v", got)
	}
	if got := Score([]float32{1, 0}, []float32{-1, 0}); got != -100 {
		t.Errorf("opposite: %v (the reference does not floor at 0)", got)
	}
	if got := Score([]float32{3, 4}, []float32{4, 3}); math.Abs(got-96) > 1e-9 {
		t.Errorf("3-4-5: %v", got)
	}
}
