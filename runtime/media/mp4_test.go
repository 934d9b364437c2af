package media

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"
)

func jpegFrame(t testing.TB, w, h int, shade uint8) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = shade
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMJPEGMP4(t *testing.T) {
	frames := [][]byte{jpegFrame(t, 64, 48, 10), jpegFrame(t, 64, 48, 200), jpegFrame(t, 64, 48, 90)}
	b, err := MJPEGMP4(frames, 64, 48, 8)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[4:8]) != "ftyp" || string(b[8:12]) != "isom" {
		t.Fatalf("starts %q", b[:12])
	}
	moov, ok := findBox(b, "moov")
	if !ok {
		t.Fatal("no moov")
	}
	if _, ok := findBox(moov, "mvhd"); !ok {
		t.Fatal("no mvhd")
	}
	got, err := MP4Frames(b)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d frames, %v", len(got), err)
	}
	for i, f := range got {
		if !bytes.Equal(f, frames[i]) {
			t.Fatalf("frame %d differs", i)
		}
		if _, err := jpeg.Decode(bytes.NewReader(f)); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if _, err := MJPEGMP4(nil, 64, 48, 8); err == nil {
		t.Fatal("an empty video was written")
	}
	if _, err := MP4Frames(b[:len(b)-20]); err == nil {
		t.Fatal("a cut-off file read back")
	}
}

// FuzzMP4Frames: reading a file's samples never panics and never returns
// a sample outside the file.
func FuzzMP4Frames(f *testing.F) {
	b, _ := MJPEGMP4([][]byte{{0xFF, 0xD8, 0xFF, 0xD9}, {0xFF, 0xD8, 0xFF, 0xD9}}, 16, 16, 4)
	f.Add(b)
	f.Add([]byte("\x00\x00\x00\x08moov"))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, err := MP4Frames(data)
		if err != nil {
			return
		}
		total := 0
		for _, fr := range frames {
			total += len(fr)
		}
		if len(frames) == 0 || total > len(data)*len(frames) {
			t.Fatalf("%d frames of %d bytes from %d bytes", len(frames), total, len(data))
		}
	})
}
