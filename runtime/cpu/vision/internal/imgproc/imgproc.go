// Package imgproc holds the image operations the reference graders apply
// before their networks, each reproducing another library's arithmetic:
// PIL's bicubic resampling of 8-bit images (what torchvision's Resize does
// to a PIL image, for CLIP), torchvision's centre crop and normalisation,
// and torch's bilinear interpolation without antialiasing (F.interpolate,
// for Inception).
package imgproc

import (
	"image"
	"image/color"
)

// RGB is an 8-bit RGB image, row-major, three bytes a pixel: what PIL's
// Image.convert("RGB") holds.
type RGB struct {
	W, H int
	Pix  []uint8
}

// FromImage reads img as PIL reads a decoded image converted to RGB: the
// colour channels as stored, alpha dropped (not composited). Grayscale
// images repeat their value; other colour models go through Go's RGBA
// conversion (un-premultiplied for partly transparent pixels).
func FromImage(img image.Image) *RGB {
	b := img.Bounds()
	out := &RGB{W: b.Dx(), H: b.Dy(), Pix: make([]uint8, 3*b.Dx()*b.Dy())}
	i := 0
	switch m := img.(type) {
	case *image.NRGBA:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < out.W; x++ {
				copy(out.Pix[i:i+3], row[4*x:4*x+3])
				i += 3
			}
		}
	case *image.RGBA:
		// PIL has no premultiplied mode; an opaque image reads the same
		// either way, and a translucent one is un-premultiplied below.
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < out.W; x++ {
				p := row[4*x : 4*x+4]
				if p[3] == 0xff {
					copy(out.Pix[i:i+3], p[:3])
				} else {
					c := color.NRGBAModel.Convert(color.RGBA{p[0], p[1], p[2], p[3]}).(color.NRGBA)
					out.Pix[i], out.Pix[i+1], out.Pix[i+2] = c.R, c.G, c.B
				}
				i += 3
			}
		}
	case *image.Gray:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < out.W; x++ {
				v := row[x]
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = v, v, v
				i += 3
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = c.R, c.G, c.B
				i += 3
			}
		}
	}
	return out
}
