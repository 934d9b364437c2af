package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/mewkiz/flac"

	"github.com/ttis-dev/ttis/runtime/media"
)

// maxClipSeconds bounds a decoded clip: FLAC's constant subframes let a
// few bytes claim minutes of samples, and a transcription server refuses
// clips far shorter than this anyway.
const maxClipSeconds = 20 * 60

// maxClipSamples bounds the decoded clip whatever its header says (128
// MiB of 16-bit samples).
const maxClipSamples = 64 << 20

// maxSamplesPerByte bounds how far a clip may expand: speech compresses to
// about a byte per 16-bit sample, while a run of constant subframes claims
// up to 65,535 samples in a dozen bytes. Such a file is a decompression
// bomb, not a recording: refusing it early keeps a few kilobytes from
// costing seconds of decoding (freeSamples keeps short clips unaffected).
const (
	maxSamplesPerByte = 64
	freeSamples       = 1 << 20
)

// flacToWAV decodes a FLAC file (LibriSpeech's own encoding, which the
// Hub copy's Audio feature carries) into a 16-bit PCM WAV at its own
// sample rate and channel count, the form a transcription server sniffs.
// whisper_tt decodes clips too (with soundfile) before posting them as
// WAV; it writes float32 samples resampled to 16 kHz, ttis writes the
// decoded integers unchanged (LibriSpeech is 16 kHz, 16-bit already).
func flacToWAV(raw []byte) ([]byte, error) {
	st, err := flac.New(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("FLAC: %w", err)
	}
	defer st.Close()
	info := st.Info
	if info.NChannels < 1 || info.SampleRate == 0 || info.BitsPerSample < 4 || info.BitsPerSample > 32 {
		return nil, fmt.Errorf("FLAC: %d channels at %d Hz and %d bits is not a clip ttis decodes", info.NChannels, info.SampleRate, info.BitsPerSample)
	}
	limit := min(int(info.SampleRate)*maxClipSeconds*int(info.NChannels), maxClipSamples)
	expand := max(len(raw)*maxSamplesPerByte, freeSamples)
	shift := int(info.BitsPerSample) - 16
	var pcm []int16
	for {
		f, err := st.ParseNext()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("FLAC frame: %w", err)
		}
		if len(f.Subframes) != int(info.NChannels) {
			return nil, fmt.Errorf("FLAC frame %d has %d channels, the stream %d", f.Num, len(f.Subframes), info.NChannels)
		}
		n := f.Subframes[0].NSamples
		if len(pcm)+n*len(f.Subframes) > limit {
			return nil, fmt.Errorf("FLAC clip is longer than %d minutes", maxClipSeconds/60)
		}
		if len(pcm)+n*len(f.Subframes) > expand {
			return nil, fmt.Errorf("FLAC clip of %d bytes decodes to more than %d samples (over %d per byte): not a recording", len(raw), expand, maxSamplesPerByte)
		}
		for i := range n {
			for _, sf := range f.Subframes {
				if i >= len(sf.Samples) {
					return nil, fmt.Errorf("FLAC frame %d: a channel holds %d samples, want %d", f.Num, len(sf.Samples), n)
				}
				v := sf.Samples[i]
				if shift > 0 {
					v >>= shift
				} else if shift < 0 {
					v <<= -shift
				}
				pcm = append(pcm, int16(v))
			}
		}
	}
	if len(pcm) == 0 {
		return nil, errors.New("FLAC clip has no samples")
	}
	return media.WAV(pcm, int(info.SampleRate), int(info.NChannels)), nil
}
