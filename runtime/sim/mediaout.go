package sim

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ttis-dev/ttis/runtime/media"
)

// scene is a seeded picture: a two-colour gradient under a few soft
// discs, which drift over time for a video.
type scene struct {
	c0, c1 [3]float64
	discs  []disc
}

type disc struct {
	x, y, r, dx, dy float64
	c               [3]float64
}

func newScene(rng *rand.Rand) *scene {
	col := func() [3]float64 { return [3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255} }
	s := &scene{c0: col(), c1: col(), discs: make([]disc, 3+rng.IntN(4))}
	for i := range s.discs {
		s.discs[i] = disc{x: rng.Float64(), y: rng.Float64(), r: 0.05 + rng.Float64()*0.2, dx: rng.Float64() - 0.5, dy: rng.Float64() - 0.5, c: col()}
	}
	return s
}

// paint draws the scene at time t (seconds) on a w×h image.
func (s *scene) paint(w, h int, t float64) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	side := float64(min(w, h))
	type placed struct{ x, y, r float64 }
	at := make([]placed, len(s.discs))
	for i, d := range s.discs {
		at[i] = placed{(d.x + d.dx*t*0.2) * float64(w), (d.y + d.dy*t*0.2) * float64(h), d.r * side}
	}
	for y := range h {
		f := float64(y) / float64(max(h-1, 1))
		row := img.Pix[y*img.Stride:]
		for x := range w {
			c := [3]float64{s.c0[0]*(1-f) + s.c1[0]*f, s.c0[1]*(1-f) + s.c1[1]*f, s.c0[2]*(1-f) + s.c1[2]*f}
			for i, d := range s.discs {
				dx, dy := float64(x)-at[i].x, float64(y)-at[i].y
				if dist := dx*dx + dy*dy; dist < at[i].r*at[i].r {
					a := 1 - math.Sqrt(dist)/at[i].r
					for k := range c {
						c[k] = c[k]*(1-a) + d.c[k]*a
					}
				}
			}
			row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = uint8(c[0]), uint8(c[1]), uint8(c[2]), 255
		}
	}
	return img
}

// drawPNG paints a seeded picture and encodes it as PNG. With an input
// image (image-to-image, edits) the picture is laid over it by strength,
// only where the mask is light when there is a mask.
func drawPNG(rng *rand.Rand, w, h int, input, mask []byte, strength float64) ([]byte, error) {
	img := newScene(rng).paint(w, h, 0)
	if len(input) > 0 {
		if err := blend(img, input, mask, strength); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// blend mixes the input image (scaled to img's size, nearest pixel) into
// img: a pixel keeps the input by 1-strength, times the mask's darkness.
func blend(img *image.NRGBA, input, mask []byte, strength float64) error {
	in, _, err := image.Decode(bytes.NewReader(input))
	if err != nil {
		return err
	}
	var m image.Image
	if len(mask) > 0 {
		if m, _, err = image.Decode(bytes.NewReader(mask)); err != nil {
			return err
		}
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	at := func(src image.Image, x, y int) color.NRGBA {
		b := src.Bounds()
		return color.NRGBAModel.Convert(src.At(b.Min.X+x*b.Dx()/w, b.Min.Y+y*b.Dy()/h)).(color.NRGBA)
	}
	for y := range h {
		for x := range w {
			keep := 1 - strength
			if m != nil {
				c := at(m, x, y)
				keep = 1 - strength*(float64(c.R)+float64(c.G)+float64(c.B))/765
			}
			src := at(in, x, y)
			o := img.Pix[y*img.Stride+x*4:]
			o[0] = uint8(float64(o[0])*(1-keep) + float64(src.R)*keep)
			o[1] = uint8(float64(o[1])*(1-keep) + float64(src.G)*keep)
			o[2] = uint8(float64(o[2])*(1-keep) + float64(src.B)*keep)
		}
	}
	return nil
}

// drawMP4 renders a seeded scene's frames as JPEGs in an MP4.
func drawMP4(rng *rand.Rand, w, h, fps, frames int) ([]byte, error) {
	sc := newScene(rng)
	jpegs := make([][]byte, frames)
	for i := range jpegs {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, sc.paint(w, h, float64(i)/float64(fps)), &jpeg.Options{Quality: 80}); err != nil {
			return nil, err
		}
		jpegs[i] = buf.Bytes()
	}
	return media.MJPEGMP4(jpegs, w, h, fps)
}

// synthWAV writes dur of 16-bit mono audio: one seeded tone per word with
// a short fade in and out, so that the clip is audible and its length
// follows the text.
func synthWAV(rng *rand.Rand, nwords int, dur time.Duration, rate int) []byte {
	n := int(dur.Seconds() * float64(rate))
	samples := make([]int16, n)
	per := max(n/nwords, 1)
	for wi := 0; wi*per < n; wi++ {
		freq := 140 + rng.Float64()*160
		end := min((wi+1)*per, n)
		for i := wi * per; i < end; i++ {
			p := float64(i-wi*per) / float64(per)
			env := math.Min(1, math.Min(p*10, (1-p)*10))
			samples[i] = int16(8000 * env * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
		}
	}
	return media.WAV(samples, rate, 1)
}

// imageLabels are the classes the simulated CNN names (ImageNet-1k
// examples).
var imageLabels = []string{
	"tabby cat", "golden retriever", "goldfish", "great white shark", "tree frog", "bald eagle", "king penguin",
	"African elephant", "red fox", "zebra", "ladybug", "monarch butterfly", "pizza", "espresso", "banana",
	"strawberry", "sports car", "school bus", "steam locomotive", "airliner", "container ship", "mountain bike",
	"acoustic guitar", "grand piano", "laptop", "cellular telephone", "analog clock", "umbrella", "volcano",
	"lakeside", "alp", "coral reef", "daisy", "mushroom", "castle", "lighthouse", "suspension bridge",
}
