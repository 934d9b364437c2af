package tasks

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"

	"github.com/ttis-dev/ttis/runtime/media"
)

// encodeFLAC writes mono 16-bit samples as a FLAC file (verbatim
// subframes, 4096-sample blocks) with the library's own encoder.
func encodeFLAC(t testing.TB, samples []int32, rate uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	info := &meta.StreamInfo{BlockSizeMin: 16, BlockSizeMax: 4096, SampleRate: rate, NChannels: 1, BitsPerSample: 16, NSamples: uint64(len(samples))}
	enc, err := flac.NewEncoder(&buf, info)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(samples); off += 4096 {
		n := min(4096, len(samples)-off)
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(n), SampleRate: rate, Channels: frame.ChannelsMono, BitsPerSample: 16},
			Subframes: []*frame.Subframe{{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: samples[off : off+n], NSamples: n}}}
		if err := enc.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFLACClipBecomesWAV: a FLAC clip in the Audio feature is decoded into
// a 16-bit WAV holding the same samples, rate and channel count.
func TestFLACClipBecomesWAV(t *testing.T) {
	samples := make([]int32, 10000)
	for i := range samples {
		samples[i] = int32((i*37)%20000 - 10000)
	}
	raw := encodeFLAC(t, samples, 16000)
	wav, err := AudioBytes(map[string]any{"bytes": string(raw), "path": "1688-142285-0000.flac"})
	if err != nil {
		t.Fatal(err)
	}
	ai, err := media.ProbeWAV(wav)
	if err != nil || ai.SampleRate != 16000 || ai.Channels != 1 {
		t.Fatalf("WAV %+v, %v", ai, err)
	}
	pcm := wav[44:]
	if len(pcm) != 2*len(samples) {
		t.Fatalf("%d sample bytes, want %d", len(pcm), 2*len(samples))
	}
	for i, s := range samples {
		if got := int16(binary.LittleEndian.Uint16(pcm[2*i:])); int32(got) != s {
			t.Fatalf("sample %d = %d, want %d", i, got, s)
		}
	}
	// A cut-off file is an error, not a short clip.
	if _, err := AudioBytes(map[string]any{"bytes": string(raw[:len(raw)/2])}); err == nil {
		t.Error("truncated FLAC accepted")
	}
}

// FuzzAudioBytes: any bytes give a clip a server can sniff or an error,
// never a panic or an unbounded allocation.
// encodeConstantFLAC writes frames of 4096 equal samples: a constant
// subframe each, a few bytes per frame.
func encodeConstantFLAC(t testing.TB, frames int) []byte {
	t.Helper()
	var buf bytes.Buffer
	info := &meta.StreamInfo{BlockSizeMin: 4096, BlockSizeMax: 4096, SampleRate: 16000, NChannels: 1, BitsPerSample: 16, NSamples: uint64(frames * 4096)}
	enc, err := flac.NewEncoder(&buf, info)
	if err != nil {
		t.Fatal(err)
	}
	samples := make([]int32, 4096)
	for i := range frames {
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: 4096, SampleRate: 16000, Channels: frame.ChannelsMono, BitsPerSample: 16, Num: uint64(i)},
			Subframes: []*frame.Subframe{{SubHeader: frame.SubHeader{Pred: frame.PredConstant}, Samples: samples, NSamples: 4096}}}
		if err := enc.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFLACBombRefused: constant subframes let a few kilobytes claim
// millions of samples; such a clip is refused before it is decoded
// whole, while a short run of silence (a real recording's lead-in) still
// decodes.
func TestFLACBombRefused(t *testing.T) {
	bomb := encodeConstantFLAC(t, 1024) // 4M samples
	_, err := AudioBytes(map[string]any{"bytes": string(bomb)})
	if err == nil || !strings.Contains(err.Error(), "per byte") {
		t.Fatalf("a %d-byte clip of 4M samples: err %v, want a refusal per byte", len(bomb), err)
	}
	quiet := encodeConstantFLAC(t, 32) // 131,072 samples, under the free allowance
	wav, err := AudioBytes(map[string]any{"bytes": string(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(wav) - 44; got != 2*32*4096 {
		t.Fatalf("%d sample bytes, want %d", got, 2*32*4096)
	}
}

func FuzzAudioBytes(f *testing.F) {
	f.Add([]byte("fLaC\x00\x00\x00\x22"))
	f.Add(media.WAV([]int16{1, 2, 3}, 16000, 1))
	f.Add(encodeFLAC(f, []int32{1, -1, 5, 7, 9}, 16000))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := AudioBytes(map[string]any{"bytes": string(b)})
		if err != nil {
			return
		}
		if _, err := media.ProbeAudio(out); err != nil {
			t.Fatalf("accepted audio does not probe: %v", err)
		}
	})
}
