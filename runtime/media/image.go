package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	// Register the decoders ProbeImage accepts.
	_ "image/jpeg"
	_ "image/png"
)

// MaxImagePixels bounds the images ProbeImage accepts (a 64-megapixel
// image decodes to 256 MiB of RGBA).
const MaxImagePixels = 8192 * 8192

// ImageInfo is what an image's bytes say about it.
type ImageInfo struct {
	// Format is "png" or "jpeg".
	Format        string
	Width, Height int
}

// ProbeImage checks that data is a PNG or JPEG image of a sane size by
// reading its header, then decodes it in full to make sure it is whole.
func ProbeImage(data []byte) (ImageInfo, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		if errors.Is(err, image.ErrFormat) {
			return ImageInfo{}, errors.New("not a PNG or JPEG image")
		}
		return ImageInfo{}, fmt.Errorf("malformed image: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > MaxImagePixels {
		return ImageInfo{}, fmt.Errorf("unsupported image size %dx%d (at most %d pixels)", cfg.Width, cfg.Height, MaxImagePixels)
	}
	if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
		return ImageInfo{}, fmt.Errorf("malformed %s image: %v", format, err)
	}
	return ImageInfo{Format: format, Width: cfg.Width, Height: cfg.Height}, nil
}
