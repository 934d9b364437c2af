package check

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/runtime/media"
)

// The MP3 clip the transcription tests send is one an independent decoder
// plays: ffmpeg decodes it to 3 s of silence (skipped where ffmpeg is not
// installed: apt-get install ffmpeg).
func TestSilentMP3DecodesWithFFmpeg(t *testing.T) {
	clip := silentMP3(3)
	ai, err := media.ProbeMP3(clip)
	if err != nil || ai.Duration.Seconds() < 3 || ai.Duration.Seconds() > 3.05 {
		t.Fatalf("ProbeMP3: %+v %v", ai, err)
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not installed: the clip was checked by ttis's own MP3 reader only")
	}
	in := filepath.Join(t.TempDir(), "clip.mp3")
	if err := os.WriteFile(in, clip, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-i", in, "-f", "s16le", "-ac", "1", "-")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, errb.String())
	}
	samples := make([]int16, out.Len()/2)
	if err := binary.Read(&out, binary.LittleEndian, samples); err != nil {
		t.Fatal(err)
	}
	if s := float64(len(samples)) / 44100; s < 2.99 || s > 3.05 {
		t.Errorf("ffmpeg decoded %.3f s, want 3", s)
	}
	for i, v := range samples {
		if v != 0 {
			t.Fatalf("sample %d is %d, want silence", i, v)
		}
	}
}
