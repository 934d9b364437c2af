// Package media holds the file formats the media front door and engines
// share: sniffing and measuring uploaded audio (WAV, MP3) without trusting
// a file name or a Content-Type, and writing WAV files. Everything here
// reads bytes already bounded by the caller's limits and never allocates in
// proportion to what a header claims.
package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// AudioInfo is what a clip's bytes say about it.
type AudioInfo struct {
	// Format is "wav" or "mp3".
	Format     string
	Duration   time.Duration
	SampleRate int
	Channels   int
}

// ErrNotAudio is returned by ProbeAudio for bytes that are neither WAV nor
// MP3.
var ErrNotAudio = errors.New("not a WAV or MP3 file")

// ProbeAudio sniffs data as WAV (RIFF/WAVE) or MP3 (an ID3v2 tag or an
// MPEG audio frame sync) and measures it. The error says what is wrong
// (not audio, truncated, unsupported encoding).
func ProbeAudio(data []byte) (AudioInfo, error) {
	switch {
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return ProbeWAV(data)
	case len(data) >= 3 && string(data[0:3]) == "ID3", len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return ProbeMP3(data)
	}
	return AudioInfo{}, ErrNotAudio
}

// WAV format tags.
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// ProbeWAV reads a RIFF/WAVE header: the fmt chunk (PCM or IEEE float,
// 1-8 channels, 8-32 bits) and the length of the data chunk, which must be
// present in full.
func ProbeWAV(data []byte) (AudioInfo, error) {
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return AudioInfo{}, errors.New("not a WAV file: no RIFF/WAVE header")
	}
	var (
		haveFmt                bool
		format, channels, bits uint16
		rate                   uint32
		blockAlign             uint16
		dataLen                int
		haveData               bool
	)
	off := 12
	for off+8 <= len(data) {
		id := string(data[off : off+4])
		size := int(binary.LittleEndian.Uint32(data[off+4 : off+8]))
		body := off + 8
		if size < 0 || size > len(data)-body {
			if id == "data" {
				return AudioInfo{}, fmt.Errorf("truncated WAV file: the data chunk says %d bytes but only %d follow", size, len(data)-body)
			}
			return AudioInfo{}, fmt.Errorf("truncated WAV file: chunk %q says %d bytes but only %d follow", printable(id), size, len(data)-body)
		}
		switch id {
		case "fmt ":
			if size < 16 {
				return AudioInfo{}, fmt.Errorf("malformed WAV file: fmt chunk of %d bytes (want at least 16)", size)
			}
			f := data[body : body+size]
			format = binary.LittleEndian.Uint16(f[0:2])
			channels = binary.LittleEndian.Uint16(f[2:4])
			rate = binary.LittleEndian.Uint32(f[4:8])
			blockAlign = binary.LittleEndian.Uint16(f[12:14])
			bits = binary.LittleEndian.Uint16(f[14:16])
			if format == wavExtensible && size >= 26 {
				format = binary.LittleEndian.Uint16(f[24:26])
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return AudioInfo{}, errors.New("malformed WAV file: the data chunk comes before the fmt chunk")
			}
			dataLen, haveData = size, true
		}
		if haveData {
			break
		}
		off = body + size + size&1 // chunks are padded to an even length
	}
	if !haveFmt {
		return AudioInfo{}, errors.New("truncated WAV file: no fmt chunk")
	}
	if !haveData {
		return AudioInfo{}, errors.New("truncated WAV file: no data chunk")
	}
	if format != wavPCM && format != wavFloat {
		return AudioInfo{}, fmt.Errorf("unsupported WAV encoding (format tag %d); send PCM or IEEE float", format)
	}
	if channels < 1 || channels > 8 {
		return AudioInfo{}, fmt.Errorf("unsupported WAV file: %d channels (1-8 supported)", channels)
	}
	if rate < 1000 || rate > 384000 {
		return AudioInfo{}, fmt.Errorf("unsupported WAV file: sample rate %d Hz (1000-384000 supported)", rate)
	}
	if bits != 8 && bits != 16 && bits != 24 && bits != 32 || format == wavFloat && bits != 32 {
		return AudioInfo{}, fmt.Errorf("unsupported WAV file: %d bits per sample", bits)
	}
	if want := channels * bits / 8; blockAlign != want {
		return AudioInfo{}, fmt.Errorf("malformed WAV file: block align %d, want %d for %d channels of %d bits", blockAlign, want, channels, bits)
	}
	frames := dataLen / int(blockAlign)
	d := time.Duration(float64(frames) / float64(rate) * float64(time.Second))
	return AudioInfo{Format: "wav", Duration: d, SampleRate: int(rate), Channels: int(channels)}, nil
}

func printable(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}

// MPEG audio tables (ISO 11172-3, 13818-3): bitrates in kbit/s by
// [version is MPEG-1][layer index 1..3][bitrate index], sample rates by
// [version][index].
var (
	mp3Bitrates = [2][4][16]int{
		{ // MPEG-2 and 2.5
			{},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0},      // layer III
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0},      // layer II
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256, 0}, // layer I
		},
		{ // MPEG-1
			{},
			{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0},     // layer III
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 0},    // layer II
			{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 0}, // layer I
		},
	}
	mp3Rates = [4][3]int{
		{11025, 12000, 8000},  // MPEG-2.5
		{},                    // reserved
		{22050, 24000, 16000}, // MPEG-2
		{44100, 48000, 32000}, // MPEG-1
	}
)

// mp3Frame parses the frame header at h: its length in bytes, samples
// per channel, sample rate and channel count.
func mp3Frame(h []byte) (length, samples, rate, channels int, ok bool) {
	if len(h) < 4 || h[0] != 0xFF || h[1]&0xE0 != 0xE0 {
		return 0, 0, 0, 0, false
	}
	version := int(h[1]>>3) & 3 // 0: 2.5, 1: reserved, 2: 2, 3: 1
	layer := int(h[1]>>1) & 3   // 1: III, 2: II, 3: I
	bri := int(h[2] >> 4)
	sri := int(h[2]>>2) & 3
	pad := int(h[2]>>1) & 1
	if version == 1 || layer == 0 || bri == 0 || bri == 15 || sri == 3 {
		return 0, 0, 0, 0, false
	}
	mpeg1 := 0
	if version == 3 {
		mpeg1 = 1
	}
	kbps := mp3Bitrates[mpeg1][layer][bri]
	rate = mp3Rates[version][sri]
	channels = 2
	if h[3]>>6 == 3 {
		channels = 1
	}
	switch layer {
	case 3: // layer I
		return (12*kbps*1000/rate + pad) * 4, 384, rate, channels, true
	case 2: // layer II
		return 144*kbps*1000/rate + pad, 1152, rate, channels, true
	}
	if mpeg1 == 1 {
		return 144*kbps*1000/rate + pad, 1152, rate, channels, true
	}
	return 72*kbps*1000/rate + pad, 576, rate, channels, true
}

// ProbeMP3 skips an ID3v2 tag and walks the MPEG audio frames to the end,
// summing their samples. Bytes after the last whole frame are allowed only
// as an ID3v1 tag ("TAG") or a cut-off last frame; anything else is not
// MP3.
func ProbeMP3(data []byte) (AudioInfo, error) {
	off := 0
	if len(data) >= 10 && string(data[0:3]) == "ID3" {
		// The tag size is a 28-bit "syncsafe" integer (7 bits a byte).
		sz := int(data[6]&0x7F)<<21 | int(data[7]&0x7F)<<14 | int(data[8]&0x7F)<<7 | int(data[9]&0x7F)
		off = 10 + sz
		if data[5]&0x10 != 0 {
			off += 10 // footer
		}
		if off > len(data) {
			return AudioInfo{}, errors.New("truncated MP3 file: the ID3 tag runs past the end")
		}
	}
	var frames, samples, rate, channels int
	for off < len(data) {
		n, s, r, c, ok := mp3Frame(data[off:])
		if !ok {
			if frames > 0 && bytes.HasPrefix(data[off:], []byte("TAG")) {
				break
			}
			if frames == 0 {
				return AudioInfo{}, fmt.Errorf("not an MP3 file: no MPEG audio frame at byte %d", off)
			}
			return AudioInfo{}, fmt.Errorf("malformed MP3 file: frame %d at byte %d has no valid header", frames+1, off)
		}
		if off+n > len(data) {
			break // a cut-off last frame: count what is whole
		}
		if frames > 0 && r != rate {
			return AudioInfo{}, fmt.Errorf("malformed MP3 file: frame %d changes the sample rate from %d to %d Hz", frames+1, rate, r)
		}
		frames++
		samples += s
		rate, channels = r, c
		off += n
	}
	if frames == 0 {
		return AudioInfo{}, errors.New("truncated MP3 file: no whole audio frame")
	}
	d := time.Duration(float64(samples) / float64(rate) * float64(time.Second))
	return AudioInfo{Format: "mp3", Duration: d, SampleRate: rate, Channels: channels}, nil
}

// WAV writes 16-bit PCM samples (interleaved when channels > 1) as a WAV
// file.
func WAV(samples []int16, rate, channels int) []byte {
	n := len(samples) * 2
	b := make([]byte, 44, 44+n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], wavPCM)
	binary.LittleEndian.PutUint16(b[22:], uint16(channels))
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(rate*channels*2))
	binary.LittleEndian.PutUint16(b[32:], uint16(channels*2))
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(n))
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}
