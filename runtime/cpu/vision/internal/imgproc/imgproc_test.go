package imgproc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"testing"
)

// pattern is the test image the golden files were made from (the same
// formula in testdata's generator): structured, with high frequencies.
func pattern(w, h int) *RGB {
	img := &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := img.Pix[3*(y*w+x):]
			p[0] = uint8((x*7 + y*13 + (x*y)%31) % 256)
			p[1] = uint8((x*x + 3*y) % 256)
			p[2] = uint8(((x^y)*5 + 17) % 256)
		}
	}
	return img
}

type goldenCase struct {
	Kind         string
	W, H, OW, OH int
	File         string
}

func loadCases(t *testing.T) []goldenCase {
	raw, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct{ Cases []goldenCase }
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g.Cases
}

func readPNG(t *testing.T, name string) *RGB {
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return FromImage(img)
}

// TestPILBicubicMatchesPillow checks byte equality with Pillow's resize
// and with torchvision's Resize(224) + CenterCrop(224) on PIL images.
func TestPILBicubicMatchesPillow(t *testing.T) {
	n := 0
	for _, c := range loadCases(t) {
		var got *RGB
		switch c.Kind {
		case "clip":
			w, h := ShortSide(c.W, c.H, 224)
			got = CenterCrop(ResizeBicubic(pattern(c.W, c.H), w, h), 224, 224)
		case "pil":
			got = ResizeBicubic(pattern(c.W, c.H), c.OW, c.OH)
		default:
			continue
		}
		n++
		want := readPNG(t, c.File)
		if got.W != want.W || got.H != want.H {
			t.Errorf("%s: %dx%d, want %dx%d", c.File, got.W, got.H, want.W, want.H)
			continue
		}
		diff := 0
		for i := range got.Pix {
			if got.Pix[i] != want.Pix[i] {
				diff++
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d of %d bytes differ from Pillow's", c.File, diff, len(got.Pix))
		}
	}
	if n < 10 {
		t.Fatalf("only %d resize cases", n)
	}
}

func TestBilinearMatchesTorch(t *testing.T) {
	n := 0
	for _, c := range loadCases(t) {
		if c.Kind != "bilinear" {
			continue
		}
		n++
		raw, err := os.ReadFile("testdata/" + c.File)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(raw)/4)
		for i := range want {
			want[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		got := ResizeBilinear(ToTensor(pattern(c.W, c.H)), 3, c.H, c.W, c.OH, c.OW)
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", c.File, len(got), len(want))
		}
		worst := 0.0
		for i := range got {
			worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
		}
		if worst > 1e-6 {
			t.Errorf("%s: max abs difference %g from torch", c.File, worst)
		}
	}
	if n < 3 {
		t.Fatalf("only %d bilinear cases", n)
	}
}

func TestFromImage(t *testing.T) {
	nrgba := image.NewNRGBA(image.Rect(2, 3, 4, 5))
	nrgba.Pix[0], nrgba.Pix[1], nrgba.Pix[2], nrgba.Pix[3] = 200, 100, 50, 10 // translucent: alpha dropped, colour kept
	gray := image.NewGray(image.Rect(0, 0, 1, 1))
	gray.Pix[0] = 77
	for _, c := range []struct {
		img  image.Image
		want [3]uint8
	}{{nrgba, [3]uint8{200, 100, 50}}, {gray, [3]uint8{77, 77, 77}}} {
		got := FromImage(c.img)
		if fmt.Sprint(got.Pix[:3]) != fmt.Sprint(c.want[:]) {
			t.Errorf("%T: %v, want %v", c.img, got.Pix[:3], c.want)
		}
	}
}
