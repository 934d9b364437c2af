package frames

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/runtime/media"
)

// frame i is a flat colour that encodes i, so that a decoded frame tells
// which it is.
func frameColour(i int) color.RGBA {
	return color.RGBA{uint8(10 * i), uint8(250 - 7*i), uint8(40 + 5*i), 255}
}

func flat(i, w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	c := frameColour(i)
	for p := 0; p < len(img.Pix); p += 4 {
		img.Pix[p], img.Pix[p+1], img.Pix[p+2], img.Pix[p+3] = c.R, c.G, c.B, 255
	}
	return img
}

func mjpeg(t testing.TB, n, w, h int) []byte {
	t.Helper()
	var jpegs [][]byte
	for i := range n {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, flat(i, w, h), &jpeg.Options{Quality: 95}); err != nil {
			t.Fatal(err)
		}
		jpegs = append(jpegs, buf.Bytes())
	}
	b, err := media.MJPEGMP4(jpegs, w, h, 16)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkFrames: the sampled frames are frames 0, every, 2·every… in order.
func checkFrames(t *testing.T, got []image.Image, total, n, every int) {
	t.Helper()
	if total != n {
		t.Errorf("%d frames counted, the video has %d", total, n)
	}
	if want := (n + every - 1) / every; len(got) != want {
		t.Fatalf("%d frames sampled, want %d", len(got), want)
	}
	for k, img := range got {
		want := frameColour(k * every)
		r, g, b, _ := img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2).RGBA()
		d := func(a uint32, c uint8) int { return abs(int(a>>8) - int(c)) }
		if d(r, want.R) > 6 || d(g, want.G) > 6 || d(b, want.B) > 6 {
			t.Errorf("sampled frame %d (video frame %d) is %d,%d,%d, want about %v", k, k*every, r>>8, g>>8, b>>8, want)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestMotionJPEG reads the MP4 files ttis's simulated video units write.
func TestMotionJPEG(t *testing.T) {
	const n, every = 21, 8
	got, total, err := Sample(context.Background(), mjpeg(t, n, 64, 48), every)
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, got, total, n, every)
}

// h264 encodes flat frames with the host's ffmpeg and x264, as
// tt-media-server exports its videos (libx264, yuv420p).
func h264(t *testing.T, n, w, h int) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on PATH (Debian: apt-get install ffmpeg)")
	}
	dir := t.TempDir()
	var ppm bytes.Buffer
	for i := range n {
		img := flat(i, w, h)
		fmt.Fprintf(&ppm, "P6\n%d %d\n255\n", w, h)
		for p := 0; p < len(img.Pix); p += 4 {
			ppm.Write(img.Pix[p : p+3])
		}
	}
	out := filepath.Join(dir, "v.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-f", "image2pipe", "-c:v", "ppm", "-framerate", "16", "-i", "-",
		"-c:v", "libx264", "-crf", "18", "-preset", "ultrafast", "-pix_fmt", "yuv420p", out)
	cmd.Stdin = &ppm
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestH264WithFFmpeg decodes an x264 MP4 (a real tt-media-server's
// export) through ffmpeg, every frame once.
func TestH264WithFFmpeg(t *testing.T) {
	const n, every = 25, 8
	file := h264(t, n, 64, 48)
	tr, err := videoTrack(file)
	if err != nil || tr.codec != "avc1" || tr.width != 64 || tr.height != 48 || len(tr.offsets) != n {
		t.Fatalf("track %+v, %v", tr, err)
	}
	got, total, err := Sample(context.Background(), file, every)
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, got, total, n, every)
	// Without ffmpeg the error says what to install.
	t.Setenv("PATH", t.TempDir())
	if _, _, err := Sample(context.Background(), file, every); !errors.Is(err, ErrNoFFmpeg) {
		t.Errorf("without ffmpeg: %v", err)
	}
}

// TestMJPEGAgreesWithFFmpeg: the Go decoder reads the simulated units'
// Motion JPEG as ffmpeg (the reference's imageio) does, within JPEG
// rounding.
func TestMJPEGAgreesWithFFmpeg(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg on PATH (Debian: apt-get install ffmpeg)")
	}
	file := mjpeg(t, 9, 40, 30)
	mine, n1, err := Sample(context.Background(), file, 4)
	if err != nil {
		t.Fatal(err)
	}
	theirs, n2, err := sampleFFmpeg(context.Background(), file, "mp4v", 4)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != n2 || len(mine) != len(theirs) {
		t.Fatalf("Go read %d frames (%d kept), ffmpeg %d (%d kept)", n1, len(mine), n2, len(theirs))
	}
	for k := range mine {
		for _, p := range []image.Point{{0, 0}, {20, 15}, {39, 29}} {
			r1, g1, b1, _ := mine[k].At(p.X, p.Y).RGBA()
			r2, g2, b2, _ := theirs[k].At(p.X, p.Y).RGBA()
			if abs(int(r1>>8)-int(r2>>8)) > 3 || abs(int(g1>>8)-int(g2>>8)) > 3 || abs(int(b1>>8)-int(b2>>8)) > 3 {
				t.Errorf("frame %d at %v: Go %d,%d,%d, ffmpeg %d,%d,%d", k, p, r1>>8, g1>>8, b1>>8, r2>>8, g2>>8, b2>>8)
			}
		}
	}
}

func TestBadFiles(t *testing.T) {
	good := mjpeg(t, 3, 16, 16)
	for name, tc := range map[string]struct {
		file []byte
		want string
	}{
		"empty":   {nil, "no moov box"},
		"not mp4": {[]byte("GIF89a...."), "not an MP4 file"},
		"cut":     {good[:len(good)-20], "not an MP4 file"},
	} {
		if _, _, err := Sample(context.Background(), tc.file, 8); err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, _, err := Sample(context.Background(), good, 0); err == nil {
		t.Error("sample rate 0 accepted")
	}
}

// FuzzSample feeds MP4-ish bytes to the Go reader (the Motion-JPEG path:
// ffmpeg is not run on fuzz input). It must fail cleanly.
func FuzzSample(f *testing.F) {
	f.Add(mjpeg(f, 3, 16, 16))
	f.Add([]byte{0, 0, 0, 8, 'm', 'o', 'o', 'v'})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := videoTrack(b)
		if err != nil || !isJPEG(tr) {
			return
		}
		_, _, _ = sampleJPEG(context.Background(), b, tr, 2)
	})
}
