package media

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func tone(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(i % 1000)
	}
	return s
}

// mp3Frames is n MPEG-1 layer III frames at 128 kbit/s, 44.1 kHz, stereo.
func mp3Frames(n int) []byte {
	var b []byte
	for range n {
		f := make([]byte, 417)
		copy(f, []byte{0xFF, 0xFB, 0x90, 0x44})
		b = append(b, f...)
	}
	return b
}

func TestProbeWAV(t *testing.T) {
	w := WAV(tone(32000), 16000, 1)
	ai, err := ProbeAudio(w)
	if err != nil || ai.Format != "wav" || ai.Duration != 2*time.Second || ai.SampleRate != 16000 || ai.Channels != 1 {
		t.Fatalf("%+v %v", ai, err)
	}
	st := WAV(tone(48000), 24000, 2)
	if ai, err := ProbeAudio(st); err != nil || ai.Duration != time.Second || ai.Channels != 2 {
		t.Fatalf("stereo %+v %v", ai, err)
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"truncated":    {w[:len(w)-100], "truncated WAV"},
		"header only":  {w[:20], "truncated WAV"},
		"not audio":    {[]byte("GIF89a........"), "not a WAV or MP3"},
		"bad encoding": {func() []byte { b := bytes.Clone(w); b[20] = 2; return b }(), "unsupported WAV encoding"},
		"no channels":  {func() []byte { b := bytes.Clone(w); b[22] = 0; return b }(), "channels"},
	} {
		_, err := ProbeAudio(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestProbeMP3(t *testing.T) {
	b := mp3Frames(100)
	ai, err := ProbeAudio(b)
	frames := 100.0
	want := time.Duration(frames * 1152 / 44100 * float64(time.Second))
	if err != nil || ai.Format != "mp3" || ai.SampleRate != 44100 || ai.Channels != 2 || (ai.Duration-want).Abs() > time.Millisecond {
		t.Fatalf("%+v %v (want %v)", ai, err, want)
	}
	// An ID3v2 tag in front, an ID3v1 tag behind, a cut-off last frame.
	tagged := append([]byte{'I', 'D', '3', 4, 0, 0, 0, 0, 0, 10}, make([]byte, 10)...)
	tagged = append(tagged, b...)
	tagged = append(tagged, b[:100]...)
	if ai, err := ProbeAudio(tagged); err != nil || (ai.Duration-want).Abs() > time.Millisecond {
		t.Fatalf("tagged %+v %v", ai, err)
	}
	withTag := append(bytes.Clone(b), []byte("TAG and some title")...)
	if _, err := ProbeAudio(withTag); err != nil {
		t.Fatal(err)
	}
	bad := append(bytes.Clone(b[:417*3]), []byte("garbage after frames")...)
	if _, err := ProbeAudio(bad); err == nil || !strings.Contains(err.Error(), "no valid header") {
		t.Fatalf("garbage: %v", err)
	}
	if _, err := ProbeAudio(b[:200]); err == nil {
		t.Fatal("a lone cut-off frame is not a clip")
	}
}

// FuzzProbeAudio: sniffing and measuring never panic, never report a
// negative duration and never succeed on bytes that are neither format.
func FuzzProbeAudio(f *testing.F) {
	f.Add(WAV(tone(1600), 16000, 1))
	f.Add(mp3Frames(3))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"))
	f.Add([]byte("ID3\x04\x00\x00\x00\x00\x00\x02\x00\x00\xff\xfb\x90\x44"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ai, err := ProbeAudio(data)
		if err != nil {
			return
		}
		if ai.Duration < 0 || ai.SampleRate <= 0 || ai.Channels <= 0 || ai.Format != "wav" && ai.Format != "mp3" {
			t.Fatalf("%+v", ai)
		}
	})
}

// FuzzProbeImage: image checks never panic on any bytes.
func FuzzProbeImage(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("\xff\xd8\xff\xe0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if ii, err := ProbeImage(data); err == nil && (ii.Width <= 0 || ii.Height <= 0) {
			t.Fatalf("%+v", ii)
		}
	})
}
