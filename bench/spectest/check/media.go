package check

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // servers answer JPEG images too
	"image/png"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/runtime/media"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Media endpoints (tt-media-server's, as ttis units serve them).
const (
	cnnPath   = "/v1/cnn/search-image"
	videoPath = "/v1/videos/generations"
)

const imagePrompt = "a photograph of a lighthouse on a cliff at dusk"

// pngImage is a w×h PNG with a gradient (the CNNs' input, and the input
// image of image-to-image and edit runners).
func pngImage(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // an in-memory image always encodes
	return buf.Bytes()
}

// toneWAV is a 16 kHz mono clip of a slowly wavering tone.
func toneWAV(seconds float64) []byte {
	n := int(seconds * 16000)
	s := make([]int16, n)
	for i := range s {
		f := 220 + 40*math.Sin(float64(i)/16000)
		s[i] = int16(6000 * math.Sin(2*math.Pi*f*float64(i)/16000))
	}
	return media.WAV(s, 16000, 1)
}

// silentMP3 is an MPEG-1 Layer III stream of about seconds of silence:
// 128 kbit/s mono frames at 44.1 kHz whose side information is all zero,
// which every decoder plays as silence.
func silentMP3(seconds float64) []byte {
	const frameLen = 144 * 128000 / 44100 // 417 bytes, no padding
	frames := int(math.Ceil(seconds * 44100 / 1152))
	out := make([]byte, 0, frames*frameLen)
	for range frames {
		f := make([]byte, frameLen)
		// Sync, MPEG-1, Layer III, no CRC; 128 kbit/s, 44.1 kHz; mono.
		copy(f, []byte{0xFF, 0xFB, 0x90, 0xC0})
		out = append(out, f...)
	}
	return out
}

// --- images -----------------------------------------------------------------

// imageCase is the path and body of an image request for the spec's
// runner: image-to-image and edit runners take an input image (and a
// mask) on their own routes.
func (e *env) imageCase(t spectest.Test, fields map[string]any) (string, map[string]any, error) {
	body := map[string]any{"model": e.cfg.Model, "prompt": imagePrompt, "number_of_images": 1}
	path := "/v1/images/generations"
	switch t.Params.Runner {
	case "tt-sdxl-image-to-image":
		path = "/v1/images/image-to-image"
		body["image"] = base64.StdEncoding.EncodeToString(pngImage(512, 512))
	case "tt-sdxl-edit":
		path = "/v1/images/edits"
		body["image"] = base64.StdEncoding.EncodeToString(pngImage(512, 512))
		body["mask"] = body["image"]
	}
	maps.Copy(body, fields)
	return path, body, nil
}

// images sends an image request and decodes the images of its answer
// (tt-media-server's "images", or OpenAI's data[].b64_json).
func (e *env) images(ctx context.Context, path string, body map[string]any) ([][]byte, answer) {
	a := e.post(ctx, path, body)
	if !a.ok() {
		return nil, a
	}
	var v struct {
		Images []string `json:"images"`
		Data   []struct {
			B64 string `json:"b64_json"`
		} `json:"data"`
	}
	if json.Unmarshal(a.body, &v) != nil {
		return nil, a
	}
	enc := v.Images
	if len(enc) == 0 {
		for _, d := range v.Data {
			enc = append(enc, d.B64)
		}
	}
	var out [][]byte
	for _, s := range enc {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			out = append(out, b)
		}
	}
	return out, a
}

// imageCheck sends one image request and checks it gives want images that
// decode, of size (w, h) when w > 0; it returns the first image.
func (e *env) imageCheck(ctx context.Context, r *rec, t spectest.Test, check string, fields map[string]any, want, w, h int) image.Image {
	path, body, _ := e.imageCase(t, fields)
	imgs, a := e.images(ctx, path, body)
	expected := fmt.Sprintf("HTTP 200 with %d image(s)", want)
	if w > 0 {
		expected += fmt.Sprintf(" of %dx%d", w, h)
	}
	var decoded []image.Image
	var problems []string
	for i, b := range imgs {
		img, _, err := image.Decode(bytes.NewReader(b))
		if err != nil {
			problems = append(problems, fmt.Sprintf("image %d does not decode: %v", i, err))
			continue
		}
		if sz := img.Bounds().Size(); w > 0 && (sz.X != w || sz.Y != h) {
			problems = append(problems, fmt.Sprintf("image %d is %dx%d", i, sz.X, sz.Y))
		}
		decoded = append(decoded, img)
	}
	if len(imgs) != want {
		problems = append([]string{fmt.Sprintf("%d images: %s", len(imgs), a.describe())}, problems...)
	}
	ok := a.ok() && len(problems) == 0
	r.sent(!ok)
	r.check(ok, spectest.Evidence{Check: check, Request: path + " " + compactImages(body), Expected: expected, Got: gotOr(problems, fmt.Sprintf("%d image(s)", len(decoded)))})
	if len(decoded) == 0 {
		return nil
	}
	return decoded[0]
}

// compactImages renders an image request for evidence without its base64
// inputs.
func compactImages(body map[string]any) string {
	b := clone(body)
	for _, k := range []string{"image", "mask", "prompt_image"} {
		if s, ok := b[k].(string); ok {
			b[k] = fmt.Sprintf("<%d base64 bytes>", len(s))
		}
	}
	return compact(b)
}

// refuse sends a request the spec says is invalid and checks it is turned
// down with a 4xx.
func (e *env) refuse(ctx context.Context, r *rec, check, path string, body map[string]any, shown string) {
	a := e.post(ctx, path, body)
	r.sent(!a.refused())
	if shown == "" {
		shown = compact(body)
	}
	r.check(a.refused(), spectest.Evidence{Check: check, Request: path + " " + shown, Expected: "a 4xx refusal naming the problem", Got: a.describe()})
}

func imageSteps(ctx context.Context, e *env, t spectest.Test, r *rec) {
	s := t.Params.Steps
	if s == nil {
		r.cannot("the suite documents no step range")
		return
	}
	for _, v := range uniqueInts(s.Min, s.Default, s.Max) {
		if v > 0 {
			e.imageCheck(ctx, r, t, fmt.Sprintf("num_inference_steps %d", v), map[string]any{"num_inference_steps": v, "seed": 1}, 1, 0, 0)
		}
	}
	for _, v := range []int{s.Min - 1, s.Max + 1} {
		path, body, _ := e.imageCase(t, map[string]any{"num_inference_steps": v})
		e.refuse(ctx, r, fmt.Sprintf("num_inference_steps %d (outside %d-%d)", v, s.Min, s.Max), path, body, compactImages(body))
	}
}

func imageGuidance(ctx context.Context, e *env, t spectest.Test, r *rec) {
	g := t.Params.Guidance
	if g == nil {
		r.cannot("the suite documents no guidance range")
		return
	}
	for _, v := range []float64{g.Min, g.Max} {
		e.imageCheck(ctx, r, t, fmt.Sprintf("guidance_scale %g", v), map[string]any{"guidance_scale": v, "seed": 1}, 1, 0, 0)
	}
	for _, v := range []float64{g.Min - 0.5, g.Max + 1} {
		path, body, _ := e.imageCase(t, map[string]any{"guidance_scale": v})
		e.refuse(ctx, r, fmt.Sprintf("guidance_scale %g (outside %g-%g)", v, g.Min, g.Max), path, body, compactImages(body))
	}
}

func imageSizes(ctx context.Context, e *env, t spectest.Test, r *rec) {
	if len(t.Params.Sizes) == 0 {
		r.cannot("the suite documents no sizes")
		return
	}
	w, h, _ := catalog.ParseImageSize(t.Params.Sizes[0])
	e.imageCheck(ctx, r, t, "no size (the default "+t.Params.Sizes[0]+")", map[string]any{"seed": 1}, 1, w, h)
	for _, s := range t.Params.Sizes {
		w, h, _ := catalog.ParseImageSize(s)
		e.imageCheck(ctx, r, t, "size "+s, map[string]any{"size": s, "seed": 1}, 1, w, h)
	}
	odd := "333x333"
	path, body, _ := e.imageCase(t, map[string]any{"size": odd})
	e.refuse(ctx, r, "size "+odd+" (not documented)", path, body, compactImages(body))
}

func imageCount(ctx context.Context, e *env, t spectest.Test, r *rec) {
	n := t.Params.Images
	if n == nil {
		r.cannot("the suite documents no image count range")
		return
	}
	for _, v := range uniqueInts(n.Min, n.Max) {
		e.imageCheck(ctx, r, t, fmt.Sprintf("number_of_images %d", v), map[string]any{"number_of_images": v, "seed": 1}, v, 0, 0)
	}
	for _, v := range []int{n.Min - 1, n.Max + 1} {
		path, body, _ := e.imageCase(t, map[string]any{"number_of_images": v})
		e.refuse(ctx, r, fmt.Sprintf("number_of_images %d (outside %d-%d)", v, n.Min, n.Max), path, body, compactImages(body))
	}
}

// sameImage is how close two images of the same seed must be, and how far
// apart two of different seeds: mean absolute difference per channel as
// a fraction of full scale (upstream compares SSIM; this needs no model of
// perception and still tells a reseeded image from the same one).
const sameImage = 0.02

// imageDistance is the mean absolute difference of two images' RGB
// channels as a fraction of full scale (1 when their sizes differ).
func imageDistance(a, b image.Image) float64 {
	ra, rb := a.Bounds(), b.Bounds()
	if ra.Size() != rb.Size() {
		return 1
	}
	var sum float64
	for y := range ra.Dy() {
		for x := range ra.Dx() {
			r1, g1, b1, _ := a.At(ra.Min.X+x, ra.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(rb.Min.X+x, rb.Min.Y+y).RGBA()
			sum += math.Abs(float64(r1)-float64(r2)) + math.Abs(float64(g1)-float64(g2)) + math.Abs(float64(b1)-float64(b2))
		}
	}
	return sum / (3 * 65535 * float64(ra.Dx()*ra.Dy()))
}

func imageSeed(ctx context.Context, e *env, t spectest.Test, r *rec) {
	seeds := t.Params.Seeds
	if len(seeds) < 2 {
		seeds = []int64{42, 43}
	}
	a := e.imageCheck(ctx, r, t, fmt.Sprintf("seed %d", seeds[0]), map[string]any{"seed": seeds[0]}, 1, 0, 0)
	b := e.imageCheck(ctx, r, t, fmt.Sprintf("seed %d again", seeds[0]), map[string]any{"seed": seeds[0]}, 1, 0, 0)
	c := e.imageCheck(ctx, r, t, fmt.Sprintf("seed %d", seeds[1]), map[string]any{"seed": seeds[1]}, 1, 0, 0)
	if a == nil || b == nil || c == nil {
		return
	}
	same, diff := imageDistance(a, b), imageDistance(a, c)
	r.check(same <= sameImage, spectest.Evidence{Check: fmt.Sprintf("seed %d twice", seeds[0]), Request: "two requests with the same seed",
		Expected: fmt.Sprintf("the same image (mean difference ≤ %g)", sameImage), Got: fmt.Sprintf("mean difference %.4f", same)})
	r.check(diff > sameImage, spectest.Evidence{Check: fmt.Sprintf("seeds %d and %d", seeds[0], seeds[1]), Request: "two requests with different seeds",
		Expected: fmt.Sprintf("different images (mean difference > %g)", sameImage), Got: fmt.Sprintf("mean difference %.4f", diff)})
}

// --- speech to text -----------------------------------------------------------

// transcription is a JSON transcription request of a clip.
func (e *env) transcription(clip []byte, fields map[string]any) map[string]any {
	body := map[string]any{"model": e.cfg.Model, "file": base64.StdEncoding.EncodeToString(clip), "response_format": "json"}
	maps.Copy(body, fields)
	return body
}

// shownAudio renders a transcription request without its clip.
func shownAudio(body map[string]any) string {
	b := clone(body)
	if s, ok := b["file"].(string); ok {
		b["file"] = fmt.Sprintf("<%d base64 bytes>", len(s))
	}
	return compact(b)
}

// transcribe sends a JSON-format transcription and returns its text.
func (e *env) transcribe(ctx context.Context, body map[string]any) (string, error) {
	a := e.post(ctx, openai.TranscriptionsPath, body)
	if !a.ok() {
		return "", fmt.Errorf("%s", spectest.Truncate(a.describe(), 300))
	}
	var v struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || v.Text == nil {
		return "", fmt.Errorf("no text: %s", spectest.Truncate(a.describe(), 300))
	}
	return *v.Text, nil
}

func transcribeFormats(ctx context.Context, e *env, t spectest.Test, r *rec) {
	clips := map[string][]byte{"wav": toneWAV(3), "mp3": silentMP3(3)}
	for _, f := range orStrings(t.Params.Formats, []string{"wav", "mp3"}) {
		clip, ok := clips[f]
		if !ok {
			r.cannot("ttis cannot make a " + f + " clip")
			return
		}
		body := e.transcription(clip, nil)
		text, err := e.transcribe(ctx, body)
		r.sent(err != nil)
		got := fmt.Sprintf("text %q", text)
		if err != nil {
			got = err.Error()
		}
		r.check(err == nil, spectest.Evidence{Check: "a 3 s " + f + " clip", Request: openai.TranscriptionsPath + " " + shownAudio(body), Expected: "HTTP 200 with a text", Got: got})
	}
	for _, f := range orStrings(t.Params.ResponseFormats, []string{"json", "verbose_json", "text"}) {
		body := e.transcription(toneWAV(3), map[string]any{"response_format": f})
		a := e.post(ctx, openai.TranscriptionsPath, body)
		var v struct {
			Text     *string           `json:"text"`
			Segments []json.RawMessage `json:"segments"`
		}
		jerr := json.Unmarshal(a.body, &v)
		var ok bool
		want := "HTTP 200 with"
		switch f {
		case "json":
			ok, want = jerr == nil && v.Text != nil, want+` {"text": ...}`
		case "verbose_json":
			ok, want = jerr == nil && v.Text != nil && v.Segments != nil, want+` {"text": ..., "segments": [...]}`
		case "text":
			ok, want = strings.HasPrefix(a.ctype, "text/plain"), want+" the transcript as text/plain"
		default:
			ok, want = len(a.body) > 0, want+" an answer"
		}
		ok = ok && a.ok()
		r.sent(!ok)
		r.check(ok, spectest.Evidence{Check: "response_format " + f, Request: openai.TranscriptionsPath + " " + shownAudio(body), Expected: want, Got: a.ctype + " " + a.describe()})
	}
}

func transcribeLengths(ctx context.Context, e *env, t spectest.Test, r *rec) {
	maxS := t.Params.MaxAudioSeconds
	if maxS <= 0 {
		maxS = 60
	}
	lengths := orFloats(t.Params.AudioSeconds, []float64{1, 10, 30})
	for _, s := range lengths {
		if s > maxS {
			continue
		}
		body := e.transcription(toneWAV(s), nil)
		text, err := e.transcribe(ctx, body)
		r.sent(err != nil)
		got := fmt.Sprintf("text %q", text)
		if err != nil {
			got = err.Error()
		}
		r.check(err == nil, spectest.Evidence{Check: fmt.Sprintf("a %g s clip", s), Request: openai.TranscriptionsPath + " " + shownAudio(body), Expected: "HTTP 200 with a text", Got: got})
	}
	// Streamed: one JSON line per segment, the last one done.
	s := lengths[len(lengths)/2]
	body := e.transcription(toneWAV(min(s, maxS)), map[string]any{"stream": true})
	status, lines, err := e.lines(ctx, openai.TranscriptionsPath, body)
	var problems []string
	if err != nil {
		problems = append(problems, err.Error())
	}
	for i, l := range lines {
		var v map[string]any
		if json.Unmarshal(l, &v) != nil {
			problems = append(problems, fmt.Sprintf("line %d is not JSON: %q", i+1, spectest.Truncate(string(l), 100)))
		}
	}
	var last struct {
		Done bool `json:"done"`
	}
	if len(lines) == 0 || json.Unmarshal(lines[len(lines)-1], &last) != nil || !last.Done {
		problems = append(problems, "the last line is not the final transcript (done: true)")
	}
	r.sent(len(problems) > 0)
	r.check(status == 200 && len(problems) == 0, spectest.Evidence{Check: fmt.Sprintf("a %g s clip streamed", min(s, maxS)), Request: openai.TranscriptionsPath + " " + shownAudio(body),
		Expected: "HTTP 200, JSON lines, the last with done: true", Got: gotOr(problems, fmt.Sprintf("%d lines", len(lines)))})
	over := maxS + 5
	ob := e.transcription(toneWAV(over), nil)
	e.refuse(ctx, r, fmt.Sprintf("a %g s clip (over the %g s limit)", over, maxS), openai.TranscriptionsPath, ob, shownAudio(ob))
}

func transcribeReject(ctx context.Context, e *env, t spectest.Test, r *rec) {
	wav := toneWAV(2)
	for _, c := range []struct {
		name string
		clip []byte
	}{
		{"bytes that are not audio", []byte("this is a plain text file, not a recording of anything at all")},
		{"a WAV cut short (its header promises 2 s)", wav[:1000]},
		{"an empty file", nil},
	} {
		body := e.transcription(c.clip, nil)
		e.refuse(ctx, r, c.name, openai.TranscriptionsPath, body, shownAudio(body))
	}
}

// --- text to speech -----------------------------------------------------------

// speak sends a speech request and returns its audio: the body of an
// audio answer, or the WAV inline in a JSON one.
func (e *env) speak(ctx context.Context, body map[string]any) ([]byte, error) {
	a := e.post(ctx, openai.SpeechPath, body)
	if !a.ok() {
		return nil, fmt.Errorf("%s", spectest.Truncate(a.describe(), 300))
	}
	if f, _ := body["response_format"].(string); f == "json" || f == "verbose_json" {
		var v struct {
			Audio *string `json:"audio"`
		}
		if err := json.Unmarshal(a.body, &v); err != nil || v.Audio == nil {
			return nil, fmt.Errorf("no audio in the JSON answer: %s", spectest.Truncate(a.describe(), 300))
		}
		return base64.StdEncoding.DecodeString(*v.Audio)
	}
	return a.body, nil
}

// probeSpeech checks audio is in format and returns its length.
func probeSpeech(format string, audio []byte) (time.Duration, error) {
	switch format {
	case "mp3":
		ai, err := media.ProbeMP3(audio)
		return ai.Duration, err
	case "ogg":
		if !bytes.HasPrefix(audio, []byte("OggS")) {
			return 0, errors.New("not an Ogg stream (no OggS page)")
		}
		return 0, nil
	}
	ai, err := media.ProbeWAV(audio)
	return ai.Duration, err
}

func speechFormats(ctx context.Context, e *env, t spectest.Test, r *rec) {
	for _, f := range orStrings(t.Params.Formats, []string{"wav", "json", "verbose_json"}) {
		body := map[string]any{"model": e.cfg.Model, "text": "Spec tests check what the server promises.", "response_format": f}
		audio, err := e.speak(ctx, body)
		var d time.Duration
		if err == nil {
			d, err = probeSpeech(f, audio)
		}
		r.sent(err != nil)
		got := fmt.Sprintf("%d bytes of audio, %s", len(audio), d.Round(time.Millisecond))
		if err != nil {
			got = err.Error()
		}
		want := "HTTP 200 with " + f + " audio"
		if f == "json" || f == "verbose_json" {
			want = "HTTP 200 with a JSON answer holding the WAV (audio, base64)"
		}
		r.check(err == nil, spectest.Evidence{Check: "response_format " + f, Request: openai.SpeechPath + " " + compact(body), Expected: want, Got: got})
	}
	e.refuse(ctx, r, "response_format aiff (not documented)", openai.SpeechPath,
		map[string]any{"model": e.cfg.Model, "text": "Hello.", "response_format": "aiff"}, "")
}

func speechText(ctx context.Context, e *env, t spectest.Test, r *rec) {
	paragraph := strings.Repeat("The lighthouse keeper climbed the stairs every evening to light the lamp for the ships at sea. ", 6)
	var lengths []time.Duration
	for _, text := range []string{"Hello.", "The quick brown fox jumps over the lazy dog.", paragraph} {
		body := map[string]any{"model": e.cfg.Model, "text": text, "response_format": "wav"}
		audio, err := e.speak(ctx, body)
		var d time.Duration
		if err == nil {
			d, err = probeSpeech("wav", audio)
		}
		r.sent(err != nil)
		got := fmt.Sprintf("%s of WAV", d.Round(time.Millisecond))
		if err != nil {
			got = err.Error()
		} else {
			lengths = append(lengths, d)
		}
		r.check(err == nil && d > 0, spectest.Evidence{Check: fmt.Sprintf("a text of %d characters", len(text)), Request: openai.SpeechPath + " " + compact(body),
			Expected: "HTTP 200 with WAV audio", Got: got})
	}
	if len(lengths) == 3 {
		r.check(lengths[2] > lengths[0], spectest.Evidence{Check: "longer text, longer speech", Request: "the one-word and the paragraph requests above",
			Expected: "the paragraph's speech longer than the word's", Got: fmt.Sprintf("%s and %s", lengths[2].Round(time.Millisecond), lengths[0].Round(time.Millisecond))})
	}
	for _, v := range t.Params.Voices {
		if v == "" {
			continue
		}
		body := map[string]any{"model": e.cfg.Model, "text": "Hello from another voice.", "response_format": "wav", "speaker_id": v}
		audio, err := e.speak(ctx, body)
		if err == nil {
			_, err = probeSpeech("wav", audio)
		}
		r.sent(err != nil)
		got := fmt.Sprintf("%d bytes of WAV", len(audio))
		if err != nil {
			got = err.Error()
		}
		r.check(err == nil, spectest.Evidence{Check: "speaker_id " + v, Request: openai.SpeechPath + " " + compact(body), Expected: "HTTP 200 with WAV audio", Got: got})
	}
	e.refuse(ctx, r, "an empty text", openai.SpeechPath, map[string]any{"model": e.cfg.Model, "text": "", "response_format": "wav"}, "")
	if n := t.Params.MaxChars; n > 0 {
		long := strings.Repeat("a", n+1)
		e.refuse(ctx, r, fmt.Sprintf("a text of %d characters (over %d)", n+1, n), openai.SpeechPath,
			map[string]any{"model": e.cfg.Model, "text": long, "response_format": "wav"}, fmt.Sprintf(`{"text": <%d characters>}`, n+1))
	}
}

// --- CNN ------------------------------------------------------------------------

// classification is a CNN request for the test image.
func (e *env) classification(topK int, minConfidence float64, format string) map[string]any {
	return map[string]any{"model": e.cfg.Model, "prompt": base64.StdEncoding.EncodeToString(pngImage(224, 224)),
		"top_k": topK, "min_confidence": minConfidence, "response_format": format}
}

func shownCNN(body map[string]any) string {
	b := clone(body)
	if s, ok := b["prompt"].(string); ok {
		b["prompt"] = fmt.Sprintf("<%d base64 bytes>", len(s))
	}
	return compact(b)
}

// classify sends a CNN request and returns the first image's output
// (label → confidence for json, the text for verbose_json).
func (e *env) classify(ctx context.Context, body map[string]any) (map[string]float64, answer, error) {
	a := e.post(ctx, cnnPath, body)
	if !a.ok() {
		return nil, a, fmt.Errorf("%s", spectest.Truncate(a.describe(), 300))
	}
	var v struct {
		Status    string `json:"status"`
		ImageData []struct {
			Output json.RawMessage `json:"output"`
		} `json:"image_data"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || len(v.ImageData) == 0 {
		return nil, a, fmt.Errorf("no image_data: %s", spectest.Truncate(a.describe(), 300))
	}
	if v.Status != "" && v.Status != "success" {
		return nil, a, fmt.Errorf("status %q", v.Status)
	}
	out := map[string]float64{}
	if f, _ := body["response_format"].(string); f == "json" {
		if err := json.Unmarshal(v.ImageData[0].Output, &out); err != nil {
			return nil, a, fmt.Errorf("output is not label → confidence: %v", err)
		}
	}
	return out, a, nil
}

func cnnTopK(ctx context.Context, e *env, t spectest.Test, r *rec) {
	k, c := t.Params.TopK, t.Params.Confidence
	if k == nil || c == nil {
		r.cannot("the suite documents no top_k or confidence range")
		return
	}
	for _, v := range uniqueInts(k.Min, (k.Min+k.Max)/2, k.Max) {
		body := e.classification(v, c.Min, "json")
		out, a, err := e.classify(ctx, body)
		ok := err == nil && len(out) == v
		r.sent(err != nil)
		got := compact(out)
		if err != nil {
			got = err.Error()
		}
		r.check(ok, spectest.Evidence{Check: fmt.Sprintf("top_k %d, min_confidence %g", v, c.Min), Request: cnnPath + " " + shownCNN(body),
			Expected: fmt.Sprintf("exactly %d predictions (none is below %g)", v, c.Min), Got: got + " " + a.ctype})
	}
	th := (c.Min + c.Max) / 2
	body := e.classification(k.Max, th, "json")
	out, _, err := e.classify(ctx, body)
	var below []string
	for l, p := range out {
		if p < th {
			below = append(below, fmt.Sprintf("%s %.2f", l, p))
		}
	}
	slices.Sort(below)
	got := compact(out)
	if err != nil {
		got = err.Error()
	}
	r.sent(err != nil)
	r.check(err == nil && len(out) <= k.Max && len(below) == 0, spectest.Evidence{Check: fmt.Sprintf("top_k %d, min_confidence %g", k.Max, th),
		Request: cnnPath + " " + shownCNN(body), Expected: fmt.Sprintf("at most %d predictions, each at least %g", k.Max, th), Got: gotOr(below, got)})
	e.refuse(ctx, r, fmt.Sprintf("top_k %d", k.Min-1), cnnPath, e.classification(k.Min-1, c.Min, "json"), shownCNN(e.classification(k.Min-1, c.Min, "json")))
	for _, v := range []float64{c.Min - 1, c.Max + 1} {
		b := e.classification(k.Min, v, "json")
		e.refuse(ctx, r, fmt.Sprintf("min_confidence %g (outside %g-%g)", v, c.Min, c.Max), cnnPath, b, shownCNN(b))
	}
}

func cnnFormats(ctx context.Context, e *env, t spectest.Test, r *rec) {
	for _, f := range orStrings(t.Params.Formats, []string{"json", "verbose_json"}) {
		body := e.classification(3, 0, f)
		_, a, err := e.classify(ctx, body)
		r.sent(err != nil)
		got := a.describe()
		if err != nil {
			got = err.Error()
		}
		r.check(err == nil, spectest.Evidence{Check: "response_format " + f, Request: cnnPath + " " + shownCNN(body), Expected: "HTTP 200, status success, image_data[0].output", Got: got})
	}
	b := e.classification(3, 0, "xml")
	e.refuse(ctx, r, "response_format xml (not documented)", cnnPath, b, shownCNN(b))
	b = e.classification(3, 0, "json")
	b["prompt"] = base64.StdEncoding.EncodeToString([]byte("this is not an image"))
	e.refuse(ctx, r, "bytes that are not an image", cnnPath, b, shownCNN(b))
}

// --- embeddings -----------------------------------------------------------------

// base64Vectors decodes an embeddings answer in base64 encoding
// (little-endian float32s).
func base64Vectors(raw []byte, n int) ([][]float64, error) {
	var v struct {
		Data []struct {
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if len(v.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(v.Data), n)
	}
	out := make([][]float64, n)
	for _, d := range v.Data {
		b, err := base64.StdEncoding.DecodeString(d.Embedding)
		if err != nil || len(b) == 0 || len(b)%4 != 0 || d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("embedding %d: not base64 float32s at an index of its own", d.Index)
		}
		vec := make([]float64, len(b)/4)
		for i := range vec {
			vec[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		out[d.Index] = vec
	}
	return out, nil
}

func cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

func embeddingParams(ctx context.Context, e *env, t spectest.Test, r *rec) {
	n := 8
	if in := t.Params.Inputs; in != nil && in.Max > 0 {
		n = in.Max
	}
	inputs := make([]string, n)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("Passage %d: the keeper of lighthouse number %d wrote in the log every night.", i, i*7+3)
	}
	dims := t.Params.Dimensions
	embed := func(check string, body map[string]any, want int) [][]float64 {
		a := e.post(ctx, openai.EmbeddingsPath, body)
		var vecs [][]float64
		var err error
		if !a.ok() {
			err = fmt.Errorf("%s", a.describe())
		} else if body["encoding_format"] == "base64" {
			vecs, err = base64Vectors(a.body, want)
		} else if v, perr := openai.ParseEmbeddings(a.body, want); perr != nil {
			err = perr
		} else {
			vecs = v
		}
		r.sent(err != nil)
		if err != nil {
			r.check(false, spectest.Evidence{Check: check, Request: openai.EmbeddingsPath + " " + compact(body), Expected: fmt.Sprintf("%d vectors", want), Got: err.Error()})
			return nil
		}
		return vecs
	}
	batch := map[string]any{"model": e.cfg.Model, "input": inputs, "encoding_format": "float"}
	vecs := embed(fmt.Sprintf("%d inputs", n), batch, n)
	if vecs == nil {
		return
	}
	var lens []int
	for _, v := range vecs {
		lens = append(lens, len(v))
	}
	want := len(vecs[0])
	if dims > 0 {
		want = dims
	}
	ok := true
	for _, l := range lens {
		ok = ok && l == want
	}
	r.check(ok, spectest.Evidence{Check: fmt.Sprintf("%d inputs", n), Request: openai.EmbeddingsPath + " " + compact(batch),
		Expected: fmt.Sprintf("%d vectors of %d numbers", n, want), Got: fmt.Sprintf("lengths %v", lens)})
	// Order: an input's vector is the same alone as in the batch.
	k := n / 2
	alone := map[string]any{"model": e.cfg.Model, "input": []string{inputs[k]}, "encoding_format": "float"}
	if one := embed("one input alone", alone, 1); one != nil {
		c := cosine(one[0], vecs[k])
		r.check(c >= 0.999, spectest.Evidence{Check: fmt.Sprintf("input %d alone and in the batch", k), Request: openai.EmbeddingsPath + " " + compact(alone),
			Expected: "the same vector (cosine ≥ 0.999): answers keep the inputs' order", Got: fmt.Sprintf("cosine %.6f", c)})
	}
	b64 := clone(batch)
	b64["encoding_format"] = "base64"
	if bv := embed("base64 encoding", b64, n); bv != nil {
		worst := 1.0
		for i := range bv {
			worst = min(worst, cosine(bv[i], vecs[i]))
		}
		r.check(worst >= 0.99999, spectest.Evidence{Check: "encoding_format base64", Request: openai.EmbeddingsPath + " " + compact(b64),
			Expected: "the float vectors, as little-endian float32s", Got: fmt.Sprintf("lowest cosine to the float answer %.7f", worst)})
	}
	if t.Params.Matryoshka && dims > 1 {
		short := clone(batch)
		short["dimensions"] = dims / 2
		if sv := embed(fmt.Sprintf("dimensions %d", dims/2), short, n); sv != nil {
			ok := true
			for _, v := range sv {
				ok = ok && len(v) == dims/2
			}
			r.check(ok, spectest.Evidence{Check: fmt.Sprintf("dimensions %d", dims/2), Request: openai.EmbeddingsPath + " " + compact(short),
				Expected: fmt.Sprintf("vectors of %d numbers", dims/2), Got: fmt.Sprintf("%d numbers", len(sv[0]))})
		}
	}
	e.refuse(ctx, r, "an empty input", openai.EmbeddingsPath, map[string]any{"model": e.cfg.Model, "input": ""}, "")
	if dims > 0 {
		e.refuse(ctx, r, fmt.Sprintf("dimensions %d (over the model's %d)", dims+1, dims), openai.EmbeddingsPath,
			map[string]any{"model": e.cfg.Model, "input": inputs[0], "dimensions": dims + 1}, "")
	}
}

// --- video ------------------------------------------------------------------------

// video submits a video job and waits for it to end.
func (e *env) video(ctx context.Context, body map[string]any) error {
	a := e.post(ctx, videoPath, body)
	if !a.ok() {
		return fmt.Errorf("%s", spectest.Truncate(a.describe(), 300))
	}
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(a.body, &job); err != nil || job.ID == "" {
		return fmt.Errorf("no job id: %s", spectest.Truncate(a.describe(), 300))
	}
	t0 := time.Now()
	for job.Status == "queued" || job.Status == "in_progress" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(max(time.Since(t0)/10, 50*time.Millisecond), 5*time.Second)):
		}
		g := e.get(ctx, videoPath+"/"+job.ID)
		if !g.ok() || json.Unmarshal(g.body, &job) != nil {
			return fmt.Errorf("job %s: %s", job.ID, spectest.Truncate(g.describe(), 300))
		}
	}
	if job.Status != "completed" {
		return fmt.Errorf("job %s ended %s", job.ID, job.Status)
	}
	return nil
}

func videoSteps(ctx context.Context, e *env, t spectest.Test, r *rec) {
	s := t.Params.Steps
	if s == nil {
		r.cannot("the suite documents no step range")
		return
	}
	body := map[string]any{"model": e.cfg.Model, "prompt": "waves rolling onto a beach at sunset", "num_inference_steps": s.Min, "seed": 1}
	a := e.post(ctx, videoPath, body)
	var job struct {
		ID string `json:"id"`
	}
	ok := a.ok() && json.Unmarshal(a.body, &job) == nil && job.ID != ""
	r.sent(!ok)
	r.check(ok, spectest.Evidence{Check: fmt.Sprintf("num_inference_steps %d", s.Min), Request: videoPath + " " + compact(body), Expected: "a queued job (HTTP 202 with its id)", Got: a.describe()})
	if ok {
		// The job proved admission; it need not take the device's time.
		e.post(ctx, videoPath+"/"+job.ID+"/cancel", map[string]any{})
	}
	for _, v := range []int{s.Min - 1, s.Max + 1} {
		b := clone(body)
		b["num_inference_steps"] = v
		a := e.post(ctx, videoPath, b)
		r.sent(!a.refused())
		r.check(a.refused(), spectest.Evidence{Check: fmt.Sprintf("num_inference_steps %d (outside %d-%d)", v, s.Min, s.Max), Request: videoPath + " " + compact(b),
			Expected: "a 4xx refusal naming the problem", Got: a.describe()})
		if a.ok() && json.Unmarshal(a.body, &job) == nil && job.ID != "" {
			// A job the server should have refused is not left running.
			e.post(ctx, videoPath+"/"+job.ID+"/cancel", map[string]any{})
		}
	}
}

// --- helpers -----------------------------------------------------------------------

func uniqueInts(vs ...int) []int {
	var out []int
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func orStrings(v, def []string) []string {
	if len(v) > 0 {
		return v
	}
	return def
}

func orFloats(v, def []float64) []float64 {
	if len(v) > 0 {
		return v
	}
	return def
}
