package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// The simulated media engine serves every media model of the catalog with
// real, checkable outputs (decodable PNGs, timed transcripts, valid WAVs,
// unit-length embeddings), all deterministic per input and labelled
// simulated.
//
// # Media timing rule
//
// A request waits for one of the engine's workers (the unit's
// media.device_ids groups, or the catalog layout's worker count), then
// takes, times the unit's sim.time_scale:
//
//   - image: per image, 1/tput_user seconds of the catalog's image target
//     (or its ttft_ms), scaled by num_inference_steps / the target's
//     steps; images of one request run one after another;
//   - audio (speech to text): each 5-second segment is ready once the
//     clip up to its end has been read at the target's real-time factor
//     rtr (clip seconds per second; tput_user words per second when rtr
//     is not given), and none before ttft_ms;
//   - text to speech: the generated audio at rtr (audio seconds per
//     second), and never less than ttft_ms;
//   - cnn: ttft_ms (or 1/tput_user) per image;
//   - embedding: the prompt tokens at tput_prefill tokens per second.
//
// Where the catalog has no target for the (model, device) the defaults
// below stand in: 10 s an image at 20 steps, transcription 1 s TTFT at 10×
// real time, speech 1 s TTFT at 2× real time, 50 ms a CNN image, 5000
// embedding tokens per second. The engine says which in its version
// string.
const (
	defaultImageSeconds = 10.0
	defaultImageSteps   = 20
	defaultASRTTFT      = time.Second
	defaultASRRTR       = 10.0
	defaultTTSTTFT      = time.Second
	defaultTTSRTR       = 2.0
	defaultCNNLatency   = 50 * time.Millisecond
	defaultEmbedTPS     = 5000.0
)

// MediaTiming is a simulated media device's speed.
type MediaTiming struct {
	// ImageSeconds is one image at ImageSteps steps.
	ImageSeconds float64
	ImageSteps   int
	// TTFT is the first segment of a transcription, or the start of
	// synthesized speech.
	TTFT time.Duration
	// RTR is clip (or speech) seconds per wall second; WordsPerSecond is
	// used for transcription when RTR is 0.
	RTR            float64
	WordsPerSecond float64
	// CNN is one classification.
	CNN time.Duration
	// EmbedTokensPerSecond is the embedding prefill rate.
	EmbedTokensPerSecond float64
	// FromCatalog is false when the defaults stood in.
	FromCatalog bool
}

// MediaTimingFromTargets applies the media timing rule to a spec's
// targets (the lowest-concurrency target of the spec's task).
func MediaTimingFromTargets(service string, ts []catalog.PerfTarget) MediaTiming {
	t := MediaTiming{ImageSeconds: defaultImageSeconds, ImageSteps: defaultImageSteps, TTFT: defaultASRTTFT, RTR: defaultASRRTR,
		CNN: defaultCNNLatency, EmbedTokensPerSecond: defaultEmbedTPS}
	if service == "text_to_speech" {
		t.TTFT, t.RTR = defaultTTSTTFT, defaultTTSRTR
	}
	task := map[string]string{"image": "image", "audio": "asr", "text_to_speech": "tts", "cnn": "cnn", "embedding": "embedding", "video": "video"}[service]
	var p *catalog.PerfTarget
	for i := range ts {
		if ts[i].Task == task && (p == nil || ts[i].Concurrency < p.Concurrency) {
			p = &ts[i]
		}
	}
	if p == nil {
		return t
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	switch task {
	case "image", "video":
		switch {
		case p.TputUser > 0:
			t.ImageSeconds = 1 / p.TputUser
		case p.TTFTms > 0:
			t.ImageSeconds = p.TTFTms / 1000
		default:
			return t
		}
		if p.Steps > 0 {
			t.ImageSteps = p.Steps
		}
	case "asr", "tts":
		if p.TTFTms <= 0 && p.RTR <= 0 {
			return t
		}
		if p.TTFTms > 0 {
			t.TTFT = ms(p.TTFTms)
		}
		t.RTR, t.WordsPerSecond = p.RTR, p.TputUser
		if t.RTR <= 0 && t.WordsPerSecond <= 0 {
			t.RTR = defaultASRRTR
		}
	case "cnn":
		switch {
		case p.TTFTms > 0:
			t.CNN = ms(p.TTFTms)
		case p.TputUser > 0:
			t.CNN = time.Duration(float64(time.Second) / p.TputUser)
		default:
			return t
		}
	case "embedding":
		switch {
		case p.TputPrefill > 0:
			t.EmbedTokensPerSecond = p.TputPrefill
		case p.TputUser > 0:
			t.EmbedTokensPerSecond = p.TputUser
		default:
			return t
		}
	}
	t.FromCatalog = true
	return t
}

// MediaConfig describes a simulated media engine.
type MediaConfig struct {
	Model  string
	Task   runtime.MediaTask
	Runner string
	Device string
	Mesh   [2]int
	// Workers are the chip groups of the workers (at least one).
	Workers [][]int
	Timing  MediaTiming
	// TimeScale multiplies every delay; 0 runs as fast as possible.
	TimeScale float64
	// Seed varies every output.
	Seed int64
	// Dimensions and Matryoshka describe an embedding model's vectors.
	Dimensions int
	Matryoshka bool
	// ImageSizes are an image model's sizes, the default first.
	ImageSizes []string
	// Clock defaults to RealClock.
	Clock   Clock
	Version string
}

// MediaEngine is the simulated media device. It implements
// runtime.MediaEngine and the capability interface of its task.
type MediaEngine struct {
	cfg     MediaConfig
	workers chan int
	clock   Clock
	closed  chan struct{}
}

// OpenMedia builds the sim media engine for a loaded unit whose model is a
// media model.
func OpenMedia(_ context.Context, u *units.Unit) (runtime.MediaEngine, error) {
	spec, err := catalog.Lookup(u.Model, u.Device)
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s: %w", u.Name, err)
	}
	if !spec.IsMedia() {
		return nil, fmt.Errorf("sim runtime for unit %s: %s is a %s model, not a media model", u.Name, spec.ModelName, spec.ModelType)
	}
	layout, err := catalog.MediaLayout(spec)
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s: %w", u.Name, err)
	}
	uu := *u
	uu.Spec = spec
	workers, err := uu.MediaWorkers()
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s: media.device_ids: %w", u.Name, err)
	}
	scale := 1.0
	if u.Sim.TimeScale != nil {
		scale = *u.Sim.TimeScale
	}
	timing := MediaTimingFromTargets(spec.MediaService(), spec.Targets)
	source := "the catalog's " + spec.Device + " targets"
	if !timing.FromCatalog {
		source = "ttis's default media timing (the catalog has no target)"
	}
	cfg := MediaConfig{Model: u.Model, Task: runtime.MediaTask(spec.MediaService()), Runner: layout.Runner, Device: spec.Device, Mesh: layout.Mesh,
		Workers: workers, Timing: timing, TimeScale: scale, Seed: u.Sim.Seed, ImageSizes: imageSizes(layout.Runner),
		Version: "simulating " + spec.ModelName + " (" + layout.Runner + ") on " + spec.Device + ", timed from " + source}
	if cfg.Task == runtime.TaskEmbedding {
		cfg.Dimensions, cfg.Matryoshka, _ = catalog.EmbeddingDimensions(spec.ModelName)
	}
	return NewMedia(cfg)
}

// imageSizes are the sizes a runner generates: SDXL runners take 1024x1024
// and 512x512 (tt-media-server's SDXL_VALID_IMAGE_RESOLUTIONS), the rest
// their native 1024x1024.
func imageSizes(runner string) []string {
	if strings.Contains(runner, "sdxl") {
		return []string{"1024x1024", "512x512"}
	}
	return []string{"1024x1024"}
}

// NewMedia builds a simulated media engine.
func NewMedia(cfg MediaConfig) (*MediaEngine, error) {
	if len(cfg.Workers) == 0 {
		return nil, errors.New("sim media engine: no workers")
	}
	if cfg.Task == runtime.TaskEmbedding && cfg.Dimensions <= 0 {
		return nil, fmt.Errorf("sim media engine: embedding model %s has no dimensions", cfg.Model)
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	e := &MediaEngine{cfg: cfg, workers: make(chan int, len(cfg.Workers)), clock: cfg.Clock, closed: make(chan struct{})}
	for i := range cfg.Workers {
		e.workers <- i
	}
	return e, nil
}

// Info describes the engine.
func (e *MediaEngine) Info() runtime.Info {
	return runtime.Info{Model: e.cfg.Model, Runtime: "sim", Simulated: true, Version: "ttis-sim " + e.cfg.Version}
}

// Media describes the task and workers.
func (e *MediaEngine) Media() runtime.MediaInfo {
	mi := runtime.MediaInfo{Task: e.cfg.Task, Runner: e.cfg.Runner, Device: e.cfg.Device, Mesh: e.cfg.Mesh, Workers: e.cfg.Workers,
		Dimensions: e.cfg.Dimensions, Matryoshka: e.cfg.Matryoshka}
	if e.cfg.Task == runtime.TaskImage {
		mi.ImageSizes, mi.MaxImages = e.cfg.ImageSizes, 4
		switch e.cfg.Runner {
		case "tt-sdxl-image-to-image":
			mi.ImageInput = runtime.ImageFromImage
		case "tt-sdxl-edit":
			mi.ImageInput = runtime.ImageEdit
		}
		mi.MinSteps, mi.MaxSteps, mi.DefaultSteps = 12, 50, 20
		switch e.cfg.Runner {
		case "tt-flux.1-dev", "tt-flux.1-schnell":
			mi.MinSteps = 4
		case "tt-z-image-turbo":
			mi.MinSteps = 1
		}
	}
	if e.cfg.Task == runtime.TaskVideo {
		mi.MinSteps, mi.MaxSteps, mi.DefaultSteps = 1, 100, e.cfg.Timing.ImageSteps
	}
	return mi
}

// Close ends the engine; waiting requests fail.
func (e *MediaEngine) Close() error {
	select {
	case <-e.closed:
	default:
		close(e.closed)
	}
	return nil
}

var errClosed = errors.New("the sim media engine is closed")

// work runs fn on a free worker after d (scaled) of simulated device time.
func (e *MediaEngine) work(ctx context.Context, d time.Duration) error {
	select {
	case w := <-e.workers:
		defer func() { e.workers <- w }()
	case <-ctx.Done():
		return ctx.Err()
	case <-e.closed:
		return errClosed
	}
	return e.sleep(ctx, d)
}

func (e *MediaEngine) sleep(ctx context.Context, d time.Duration) error {
	if e.cfg.TimeScale <= 0 || d <= 0 {
		return ctx.Err()
	}
	return e.clock.Sleep(ctx, time.Duration(float64(d)*e.cfg.TimeScale))
}

// rng is a generator seeded from the engine's seed and the request's
// content, so equal inputs give equal outputs.
func (e *MediaEngine) rng(parts ...[]byte) *rand.Rand {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(e.cfg.Seed))
	h.Write(b[:])
	h.Write([]byte(e.cfg.Model))
	for _, p := range parts {
		binary.LittleEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write(p)
	}
	s := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(s[0:8]), binary.LittleEndian.Uint64(s[8:16])))
}

func (e *MediaEngine) need(t runtime.MediaTask) error {
	if e.cfg.Task != t {
		return fmt.Errorf("%s is a %s model; it does not serve %s requests", e.cfg.Model, e.cfg.Task, t)
	}
	return nil
}

// GenerateImages draws Count PNGs of the requested size, deterministic per
// (seed, prompt, negative prompt, steps, guidance, index).
func (e *MediaEngine) GenerateImages(ctx context.Context, req *runtime.ImageRequest) ([][]byte, error) {
	if err := e.need(runtime.TaskImage); err != nil {
		return nil, err
	}
	steps := req.Steps
	if steps <= 0 {
		steps = e.cfg.Timing.ImageSteps
	}
	per := time.Duration(e.cfg.Timing.ImageSeconds * float64(steps) / float64(e.cfg.Timing.ImageSteps) * float64(time.Second))
	var seed []byte
	if req.HasSeed {
		seed = binary.LittleEndian.AppendUint64(nil, uint64(req.Seed))
	}
	out := make([][]byte, 0, req.Count)
	for i := range req.Count {
		if err := e.work(ctx, per); err != nil {
			return nil, err
		}
		rng := e.rng([]byte("image"), seed, []byte(req.Prompt), []byte(req.NegativePrompt),
			binary.LittleEndian.AppendUint64(nil, uint64(steps)), binary.LittleEndian.AppendUint64(nil, math.Float64bits(req.GuidanceScale)),
			binary.LittleEndian.AppendUint64(nil, uint64(i)), req.Image, req.Mask, binary.LittleEndian.AppendUint64(nil, math.Float64bits(req.Strength)))
		png, err := drawPNG(rng, req.Width, req.Height, req.Image, req.Mask, req.Strength)
		if err != nil {
			return nil, err
		}
		out = append(out, png)
	}
	return out, nil
}

// segmentSeconds is the length of one simulated transcript segment.
const segmentSeconds = 5.0

// Transcribe writes a transcript of the clip: one segment per 5 s of
// audio (the last one shorter), about 2.5 words a second, timed after the
// target's TTFT and real-time factor.
func (e *MediaEngine) Transcribe(ctx context.Context, req *runtime.TranscribeRequest, emit func(runtime.Segment) error) (*runtime.Transcript, error) {
	if err := e.need(runtime.TaskAudio); err != nil {
		return nil, err
	}
	select {
	case w := <-e.workers:
		defer func() { e.workers <- w }()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.closed:
		return nil, errClosed
	}
	dur := req.Audio.Duration.Seconds()
	rng := e.rng([]byte("transcript"), req.Audio.Data, []byte(req.Prompt))
	tr := &runtime.Transcript{Duration: dur, Language: "english"}
	if req.Language != "" {
		tr.Language = req.Language
	}
	speakers := []string{"SPEAKER_00"}
	if req.Diarize && dur > segmentSeconds {
		speakers = append(speakers, "SPEAKER_01")
	}
	var texts []string
	elapsed, words := time.Duration(0), 0
	for i := 0; float64(i)*segmentSeconds < dur; i++ {
		start := float64(i) * segmentSeconds
		end := math.Min(start+segmentSeconds, dur)
		n := max(1, int(math.Round((end-start)*2.5)))
		text := sentence(rng, n)
		// A segment is ready once the device has read the clip up to its
		// end at the real-time factor, and never before TTFT.
		var at time.Duration
		if e.cfg.Timing.RTR > 0 {
			at = time.Duration(end / e.cfg.Timing.RTR * float64(time.Second))
		} else {
			words += n
			at = time.Duration(float64(words) / max(e.cfg.Timing.WordsPerSecond, 1) * float64(time.Second))
		}
		at = max(at, e.cfg.Timing.TTFT)
		if err := e.sleep(ctx, at-elapsed); err != nil {
			return nil, err
		}
		elapsed = max(elapsed, at)
		seg := runtime.Segment{ID: i, Speaker: speakers[i%len(speakers)], Start: round3(start), End: round3(end), Text: text}
		tr.Segments = append(tr.Segments, seg)
		texts = append(texts, text)
		if emit != nil {
			if err := emit(seg); err != nil {
				return nil, err
			}
		}
	}
	tr.Text = strings.Join(texts, " ")
	tr.Speakers = speakers
	return tr, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// sentence draws n words from the sim's word list, capitalised, with a
// full stop.
func sentence(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[rng.IntN(len(words))]
	}
	ws[0] = capitalise(ws[0])
	return strings.Join(ws, " ") + "."
}

// Speech parameters: 16 kHz mono, as SpeechT5 produces, at about 2.5
// words a second.
const (
	speechRate       = 16000
	speechPerWord    = 400 * time.Millisecond
	speechMinSeconds = 0.5
)

// Speak synthesizes a WAV whose length follows the text (one tone per
// word), deterministic per text and speaker.
func (e *MediaEngine) Speak(ctx context.Context, req *runtime.SpeechRequest) (*runtime.Speech, error) {
	if err := e.need(runtime.TaskSpeech); err != nil {
		return nil, err
	}
	nwords := max(1, len(strings.Fields(req.Text)))
	dur := max(time.Duration(nwords)*speechPerWord, time.Duration(speechMinSeconds*float64(time.Second)))
	d := e.cfg.Timing.TTFT
	if e.cfg.Timing.RTR > 0 {
		d = max(d, time.Duration(float64(dur)/e.cfg.Timing.RTR))
	}
	if err := e.work(ctx, d); err != nil {
		return nil, err
	}
	rng := e.rng([]byte("speech"), []byte(req.Text), []byte(req.SpeakerID))
	return &runtime.Speech{WAV: synthWAV(rng, nwords, dur, speechRate), Duration: dur, SampleRate: speechRate}, nil
}

// Classify names classes for an image, deterministic per image bytes.
func (e *MediaEngine) Classify(ctx context.Context, req *runtime.ClassifyRequest) ([]runtime.Prediction, error) {
	if err := e.need(runtime.TaskCNN); err != nil {
		return nil, err
	}
	if err := e.work(ctx, e.cfg.Timing.CNN); err != nil {
		return nil, err
	}
	rng := e.rng([]byte("cnn"), req.Image)
	k := min(max(req.TopK, 1), len(imageLabels))
	perm := rng.Perm(len(imageLabels))[:k]
	// Confidences fall off from a top one between 50% and 99%.
	conf := 50 + rng.Float64()*49
	out := make([]runtime.Prediction, 0, k)
	for _, i := range perm {
		if conf < req.MinConfidence && len(out) > 0 {
			break
		}
		out = append(out, runtime.Prediction{Label: imageLabels[i], Confidence: math.Round(conf*100) / 100})
		conf *= 0.3 + rng.Float64()*0.3
	}
	return out, nil
}

// Video frames: the size Wan 2.2 generates at 480p, at 16 frames a
// second.
const (
	videoWidth, videoHeight = 832, 480
	videoFPS                = 16
	defaultVideoSeconds     = 5
)

// GenerateVideo renders an MP4 of drifting shapes, deterministic per
// (seed, prompt, negative prompt, steps, duration), after the image
// timing rule applied to the video target.
func (e *MediaEngine) GenerateVideo(ctx context.Context, req *runtime.VideoRequest) (*runtime.Video, error) {
	if err := e.need(runtime.TaskVideo); err != nil {
		return nil, err
	}
	steps := req.Steps
	if steps <= 0 {
		steps = e.cfg.Timing.ImageSteps
	}
	secs := req.DurationSeconds
	if secs <= 0 {
		secs = defaultVideoSeconds
	}
	d := time.Duration(e.cfg.Timing.ImageSeconds * float64(steps) / float64(e.cfg.Timing.ImageSteps) * float64(time.Second))
	if err := e.work(ctx, d); err != nil {
		return nil, err
	}
	var seed []byte
	if req.HasSeed {
		seed = binary.LittleEndian.AppendUint64(nil, uint64(req.Seed))
	}
	rng := e.rng([]byte("video"), seed, []byte(req.Prompt), []byte(req.NegativePrompt),
		binary.LittleEndian.AppendUint64(nil, uint64(steps)), binary.LittleEndian.AppendUint64(nil, uint64(secs)))
	frames := secs * videoFPS
	mp4, err := drawMP4(rng, videoWidth, videoHeight, videoFPS, frames)
	if err != nil {
		return nil, err
	}
	return &runtime.Video{MP4: mp4, Width: videoWidth, Height: videoHeight, FPS: videoFPS, Frames: frames}, nil
}

// EmbeddingInfo gives the vector length.
func (e *MediaEngine) EmbeddingInfo() (int, bool) { return e.cfg.Dimensions, e.cfg.Matryoshka }

// Embed returns a unit vector per input, deterministic per text.
func (e *MediaEngine) Embed(ctx context.Context, req *runtime.EmbedRequest) (*runtime.Embeddings, error) {
	if err := e.need(runtime.TaskEmbedding); err != nil {
		return nil, err
	}
	dims := e.cfg.Dimensions
	if req.Dimensions > 0 {
		dims = min(req.Dimensions, dims)
	}
	out := &runtime.Embeddings{Vectors: make([][]float32, len(req.Inputs))}
	for _, in := range req.Inputs {
		out.PromptTokens += max(1, len(strings.Fields(in))*4/3)
	}
	if err := e.work(ctx, time.Duration(float64(out.PromptTokens)/e.cfg.Timing.EmbedTokensPerSecond*float64(time.Second))); err != nil {
		return nil, err
	}
	for i, in := range req.Inputs {
		rng := e.rng([]byte("embedding"), []byte(in))
		v := make([]float32, e.cfg.Dimensions)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		out.Vectors[i] = normalize(v[:dims])
	}
	return out, nil
}

// normalize scales v to unit length in place.
func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

var (
	_ runtime.MediaEngine       = (*MediaEngine)(nil)
	_ runtime.ImageGenerator    = (*MediaEngine)(nil)
	_ runtime.Transcriber       = (*MediaEngine)(nil)
	_ runtime.SpeechSynthesizer = (*MediaEngine)(nil)
	_ runtime.ImageClassifier   = (*MediaEngine)(nil)
	_ runtime.Embedder          = (*MediaEngine)(nil)
	_ runtime.VideoGenerator    = (*MediaEngine)(nil)
)
