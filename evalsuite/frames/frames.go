// Package frames reads the frames of a generated video as
// tt-inference-server's video eval does (video_generation_eval_test.py
// _extract_video_frames): every frame in order, keeping those whose index
// is a multiple of the sample rate (8 there).
//
// Motion-JPEG MP4 files (what ttis's simulated units write) are read here:
// the MP4 sample table locates each frame's JPEG. Any other coding (a real
// tt-media-server exports H.264 with x264) is decoded by the host's ffmpeg,
// as the reference's imageio does through its ffmpeg or PyAV plugin; without
// ffmpeg such a video is an error that says so.
package frames

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"os"
	"os/exec"
	"strconv"
)

// ErrNoFFmpeg is returned for a video only ffmpeg can decode when there is
// no ffmpeg on PATH.
var ErrNoFFmpeg = errors.New("no ffmpeg on PATH: install it (Debian: apt-get install ffmpeg)")

// maxFramePixels bounds one decoded frame (8K).
const maxFramePixels = 7680 * 4320

// Sample returns the frames whose index is a multiple of every, in order,
// and the number of frames the video holds.
func Sample(ctx context.Context, mp4 []byte, every int) ([]image.Image, int, error) {
	if every < 1 {
		return nil, 0, fmt.Errorf("sample rate %d: want at least 1", every)
	}
	tr, err := videoTrack(mp4)
	if err != nil {
		return nil, 0, err
	}
	if isJPEG(tr) {
		return sampleJPEG(ctx, mp4, tr, every)
	}
	return sampleFFmpeg(ctx, mp4, tr.codec, every)
}

// isJPEG says whether the track's frames are JPEG images: a Motion-JPEG
// sample entry, or an MPEG-4 entry whose object type is JPEG (0x6C).
func isJPEG(tr *track) bool {
	switch tr.codec {
	case "jpeg", "mjpa", "mjpb", "MJPG":
		return true
	case "mp4v":
		return tr.objectType == 0x6C
	}
	return false
}

func sampleJPEG(ctx context.Context, file []byte, tr *track, every int) ([]image.Image, int, error) {
	var out []image.Image
	for i, off := range tr.offsets {
		if i%every != 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		end := off + tr.sizes[i]
		if off < 0 || end > int64(len(file)) || end < off {
			return nil, 0, fmt.Errorf("frame %d (%d bytes at %d) lies outside the %d-byte file", i, tr.sizes[i], off, len(file))
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(file[off:end]))
		if err != nil {
			return nil, 0, fmt.Errorf("frame %d: %w", i, err)
		}
		if cfg.Width*cfg.Height > maxFramePixels {
			return nil, 0, fmt.Errorf("frame %d is %dx%d, larger than the %d pixels read", i, cfg.Width, cfg.Height, maxFramePixels)
		}
		img, err := jpeg.Decode(bytes.NewReader(file[off:end]))
		if err != nil {
			return nil, 0, fmt.Errorf("frame %d: %w", i, err)
		}
		out = append(out, img)
	}
	return out, len(tr.offsets), nil
}

// sampleFFmpeg decodes the video with ffmpeg into a stream of binary PPM
// images, one per decoded frame (no frame dropped or repeated to keep a
// rate: -fps_mode passthrough).
func sampleFFmpeg(ctx context.Context, file []byte, codec string, every int) ([]image.Image, int, error) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, 0, fmt.Errorf("the video is coded as %q, which ttis decodes with ffmpeg: %w", codec, ErrNoFFmpeg)
	}
	tmp, err := os.CreateTemp("", "ttis-video-*.mp4")
	if err != nil {
		return nil, 0, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(file); err != nil {
		tmp.Close()
		return nil, 0, err
	}
	if err := tmp.Close(); err != nil {
		return nil, 0, err
	}
	cmd := exec.CommandContext(ctx, bin, "-nostdin", "-v", "error", "-i", tmp.Name(), "-map", "0:v:0",
		"-fps_mode", "passthrough", "-f", "image2pipe", "-c:v", "ppm", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("ffmpeg: %w", err)
	}
	out, n, readErr := readPPMs(bufio.NewReaderSize(stdout, 1<<20), every)
	if readErr != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	if waitErr != nil {
		return nil, 0, fmt.Errorf("ffmpeg could not decode the %q video: %v: %s", codec, waitErr, bytes.TrimSpace(stderr.Bytes()))
	}
	if readErr != nil {
		return nil, 0, fmt.Errorf("reading ffmpeg's frames: %w", readErr)
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("ffmpeg decoded no frame of the %q video", codec)
	}
	return out, n, nil
}

// readPPMs reads binary PPM (P6, maxval 255) images until the end of r,
// keeping every every-th.
func readPPMs(r *bufio.Reader, every int) ([]image.Image, int, error) {
	var out []image.Image
	n := 0
	for {
		if _, err := r.Peek(1); err == io.EOF {
			return out, n, nil
		}
		w, h, err := ppmHeader(r)
		if err != nil {
			return nil, n, fmt.Errorf("frame %d: %w", n, err)
		}
		size := int64(w) * int64(h) * 3
		if n%every != 0 {
			if _, err := io.CopyN(io.Discard, r, size); err != nil {
				return nil, n, fmt.Errorf("frame %d: %w", n, err)
			}
			n++
			continue
		}
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		row := make([]byte, 3*w)
		for y := range h {
			if _, err := io.ReadFull(r, row); err != nil {
				return nil, n, fmt.Errorf("frame %d: %w", n, err)
			}
			p := img.Pix[y*img.Stride:]
			for x := range w {
				p[4*x], p[4*x+1], p[4*x+2], p[4*x+3] = row[3*x], row[3*x+1], row[3*x+2], 255
			}
		}
		out = append(out, img)
		n++
		if n > maxSamples {
			return nil, n, fmt.Errorf("more than %d frames", maxSamples)
		}
	}
}

// ppmHeader reads "P6 <width> <height> 255" and the one whitespace
// byte before the pixels.
func ppmHeader(r *bufio.Reader) (w, h int, err error) {
	var fields [4]string
	for i := range fields {
		tok, err := ppmToken(r)
		if err != nil {
			return 0, 0, err
		}
		fields[i] = tok
	}
	if fields[0] != "P6" {
		return 0, 0, fmt.Errorf("not a binary PPM image (magic %q)", fields[0])
	}
	w, err1 := strconv.Atoi(fields[1])
	h, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil || w < 1 || h < 1 || w*h > maxFramePixels {
		return 0, 0, fmt.Errorf("PPM size %sx%s", fields[1], fields[2])
	}
	if fields[3] != "255" {
		return 0, 0, fmt.Errorf("PPM maxval %s: want 255 (8-bit RGB)", fields[3])
	}
	return w, h, nil
}

// ppmToken reads one whitespace-delimited header token, consuming the
// single whitespace byte after it.
func ppmToken(r *bufio.Reader) (string, error) {
	var tok []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", fmt.Errorf("PPM header cut short: %w", err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			if len(tok) > 0 {
				return string(tok), nil
			}
			continue
		case '#':
			if _, err := r.ReadString('\n'); err != nil {
				return "", fmt.Errorf("PPM comment cut short: %w", err)
			}
			continue
		}
		tok = append(tok, c)
		if len(tok) > 16 {
			return "", errors.New("PPM header token longer than 16 bytes")
		}
	}
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
