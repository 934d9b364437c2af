package sim

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ttis-dev/ttis/runtime/media"
)

// drawPNG paints a seeded picture (a two-colour gradient under a few soft
// discs) and encodes it as PNG.
func drawPNG(rng *rand.Rand, w, h int) ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	c0 := [3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}
	c1 := [3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}
	type disc struct {
		x, y, r float64
		c       [3]float64
	}
	discs := make([]disc, 3+rng.IntN(4))
	for i := range discs {
		discs[i] = disc{rng.Float64() * float64(w), rng.Float64() * float64(h), (0.05 + rng.Float64()*0.2) * float64(min(w, h)),
			[3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}}
	}
	for y := range h {
		t := float64(y) / float64(max(h-1, 1))
		row := img.Pix[y*img.Stride:]
		for x := range w {
			c := [3]float64{c0[0]*(1-t) + c1[0]*t, c0[1]*(1-t) + c1[1]*t, c0[2]*(1-t) + c1[2]*t}
			for _, d := range discs {
				dx, dy := float64(x)-d.x, float64(y)-d.y
				if dist := dx*dx + dy*dy; dist < d.r*d.r {
					a := 1 - math.Sqrt(dist)/d.r
					for k := range c {
						c[k] = c[k]*(1-a) + d.c[k]*a
					}
				}
			}
			row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = uint8(c[0]), uint8(c[1]), uint8(c[2]), 255
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
