// Package media benchmarks media models the way tt-inference-server's
// media benchmark tests define them, through tt-media-server's API:
//
//   - image generation: seconds per image and images/s at concurrency
//     (POST /v1/images/generations, one image a request, the target's
//     inference steps);
//   - speech to text: time to the first streamed segment (TTFT) and the
//     real-time factor, clip seconds per wall second (POST
//     /v1/audio/transcriptions with stream=true, a 30-second clip);
//   - text to speech: time to the answer and the real-time factor, audio
//     seconds per wall second (POST /v1/audio/speech, response_format
//     json, which the server sends whole: its first byte is its last);
//   - CNN: images/s (POST /v1/cnn/search-image, a 224x224 image);
//   - embeddings: embeddings/s and prompt tokens/s (POST /v1/embeddings,
//     16 texts a request);
//   - video: seconds per video, from submitting the job (POST
//     /v1/videos/generations) to its completion, polled, and the MP4
//     downloaded.
//
// A point is graded against the catalog's media target for the model and
// device in the same tiers as text points (bench/grade): the target's
// ttft_ms against the measured time to first result, and its tput_user
// against images/s per user (image, CNN), the real-time factor (rtr:
// speech), prompt tokens/s per user (embeddings) or videos/s per user.
package media

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/runtime/media"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Config is one media benchmark point.
type Config struct {
	Client *openai.Client
	// Model is sent in requests; Spec is the catalog entry whose task and
	// targets shape and grade the point.
	Model string
	Spec  *catalog.Spec
	// Concurrency is how many requests are in flight (0: the target's
	// concurrency, or 1); Requests how many are sent (0: 2 × concurrency).
	Concurrency int
	Requests    int
	// Done, when set, is called as each request ends.
	Done func()
}

// Point is a measured, graded media benchmark point. Metrics are NaN when
// not measured (nil).
type Point struct {
	Task        string `json:"task"`
	Concurrency int    `json:"concurrency"`
	Requests    int    `json:"requests"`
	Completed   int    `json:"completed"`
	Failed      int    `json:"failed"`
	// Errors holds the first few request errors.
	Errors   []string `json:"errors,omitempty"`
	Duration float64  `json:"duration_s"`
	// TTFTms is the mean time to the first result (the first streamed
	// segment; the whole answer for the other tasks); E2ELms the mean
	// request latency.
	TTFTms *float64 `json:"mean_ttft_ms,omitempty"`
	E2ELms *float64 `json:"mean_e2el_ms,omitempty"`
	// Image generation.
	SecondsPerImage *float64 `json:"seconds_per_image,omitempty"`
	ImagesPerSecond *float64 `json:"images_per_second,omitempty"`
	// Speech: clip (or generated audio) seconds per wall second, mean
	// over requests.
	RTF *float64 `json:"real_time_factor,omitempty"`
	// Embeddings.
	EmbeddingsPerSecond *float64 `json:"embeddings_per_second,omitempty"`
	TokensPerSecond     *float64 `json:"prompt_tokens_per_second,omitempty"`
	// UserRate is the graded per-user rate: images/s per user (image,
	// CNN), the real-time factor (speech) or prompt tokens/s per user
	// (embeddings); RateName says which.
	UserRate *float64 `json:"user_rate,omitempty"`
	RateName string   `json:"user_rate_name"`
	// Target is the catalog target graded against (nil: none).
	Target *catalog.PerfTarget `json:"target,omitempty"`
	Grade  grade.Point         `json:"target_checks"`
}

// outcome is one request's measurement.
type outcome struct {
	err      error
	latency  time.Duration
	first    time.Duration
	audio    float64 // clip or generated audio seconds
	items    int     // images or embeddings
	tokens   int
	finished time.Time
}

// taskTarget is the lowest-concurrency target of the spec's task.
func taskTarget(spec *catalog.Spec) *catalog.PerfTarget {
	task := map[string]string{"image": "image", "audio": "asr", "text_to_speech": "tts", "cnn": "cnn", "embedding": "embedding", "video": "video"}[spec.MediaService()]
	var p *catalog.PerfTarget
	for i := range spec.Targets {
		if t := &spec.Targets[i]; t.Task == task && (p == nil || t.Concurrency < p.Concurrency) {
			p = t
		}
	}
	return p
}

// Run measures one point.
func Run(ctx context.Context, cfg Config) (*Point, error) {
	if cfg.Client == nil || cfg.Spec == nil || !cfg.Spec.IsMedia() {
		return nil, errors.New("media benchmark: a client and a media model's catalog entry are required")
	}
	task := cfg.Spec.MediaService()
	target := taskTarget(cfg.Spec)
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = 1
		if target != nil && target.Concurrency > 0 {
			conc = target.Concurrency
		}
	}
	n := cfg.Requests
	if n <= 0 {
		n = 2 * conc
	}
	send, rate, err := requester(cfg, task, target)
	if err != nil {
		return nil, err
	}
	p := &Point{Task: task, Concurrency: conc, Requests: n, RateName: rate, Target: target}
	outs := make([]outcome, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					outs[i].err = ctx.Err()
					continue
				}
				t0 := time.Now()
				o := send(ctx, i)
				o.latency, o.finished = time.Since(t0), time.Now()
				if o.first == 0 {
					o.first = o.latency
				}
				outs[i] = o
				if cfg.Done != nil {
					cfg.Done()
				}
			}
		})
	}
	wg.Wait()
	p.Duration = time.Since(start).Seconds()
	var lat, first, rtf float64
	var items, tokens int
	for _, o := range outs {
		if o.err != nil {
			p.Failed++
			if len(p.Errors) < 5 {
				p.Errors = append(p.Errors, o.err.Error())
			}
			continue
		}
		p.Completed++
		lat += o.latency.Seconds()
		first += o.first.Seconds()
		items += o.items
		tokens += o.tokens
		if o.audio > 0 {
			rtf += o.audio / o.latency.Seconds()
		}
	}
	if p.Completed > 0 {
		c := float64(p.Completed)
		p.TTFTms, p.E2ELms = val(1000*first/c), val(1000*lat/c)
		switch task {
		case "image", "cnn", "video":
			p.SecondsPerImage = val(lat / float64(items))
			p.ImagesPerSecond = val(float64(items) / p.Duration)
			p.UserRate = val(float64(items) / lat)
		case "audio", "text_to_speech":
			p.RTF = val(rtf / c)
			p.UserRate = p.RTF
		case "embedding":
			p.EmbeddingsPerSecond = val(float64(items) / p.Duration)
			p.TokensPerSecond = val(float64(tokens) / p.Duration)
			p.UserRate = val(float64(tokens) / lat)
		}
	}
	p.Grade = gradePoint(cfg.Spec, task, target, p)
	return p, nil
}

// val is v, or nil when it is not a number (nothing was measured).
func val(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// orMissing is *v, or grade.Missing.
func orMissing(v *float64) float64 {
	if v == nil {
		return grade.Missing
	}
	return *v
}

// gradePoint grades the point's time to first result and per-user rate
// against the target, in the spec's tiers.
func gradePoint(spec *catalog.Spec, task string, target *catalog.PerfTarget, p *Point) grade.Point {
	in := grade.Input{Factors: grade.Factors(spec.PerfTargetsMap), Required: catalog.RequiredTiers(spec.Status),
		Completed: p.Completed, Failed: p.Failed, Measured: grade.Measured{TTFTms: orMissing(p.TTFTms), TputUser: orMissing(p.UserRate), Tput: grade.Missing}}
	if target != nil {
		t := catalog.PerfTarget{Tolerance: target.Tolerance, TTFTms: target.TTFTms, TputUser: target.TputUser}
		switch task {
		case "audio":
			if target.TTFTStreamingMs > 0 {
				t.TTFTms = target.TTFTStreamingMs
			}
			t.TputUser = target.RTR
		case "text_to_speech":
			t.TputUser = target.RTR
		case "embedding":
			// The target's ttft_ms is not given for embeddings; its
			// tput_user is prompt tokens/s per user.
			t.TTFTms = 0
		}
		in.Target = &t
	}
	g := grade.Grade(in)
	// The grade speaks of tput_user; say what it is for this task.
	rename := func(s string) string { return strings.Replace(s, "tput_user", p.RateName, 1) }
	for i := range g.Tiers {
		for j := range g.Tiers[i].Checks {
			if g.Tiers[i].Checks[j].Metric == "tput_user" {
				g.Tiers[i].Checks[j].Metric = p.RateName
			}
		}
	}
	for i := range g.Blockers {
		g.Blockers[i] = rename(g.Blockers[i])
	}
	for i := range g.Waived {
		g.Waived[i] = rename(g.Waived[i])
	}
	return g
}

// benchClip is the transcription benchmark's clip length.
const benchClip = 30 * time.Second

// requester returns the function that sends request i of the task, and
// the name of the per-user rate graded.
func requester(cfg Config, task string, target *catalog.PerfTarget) (func(context.Context, int) outcome, string, error) {
	c := cfg.Client
	switch task {
	case "image":
		steps := 0
		if target != nil {
			steps = target.Steps
		}
		// The SDXL image-to-image and inpainting runners take an image
		// (and a mask) on their own routes.
		path, extra := "/v1/images/generations", map[string]any{}
		if runner, _ := catalog.MediaRunner(cfg.Spec); runner == "tt-sdxl-image-to-image" || runner == "tt-sdxl-edit" {
			img, err := testImage()
			if err != nil {
				return nil, "", err
			}
			extra["image"] = base64.StdEncoding.EncodeToString(img)
			path = "/v1/images/image-to-image"
			if runner == "tt-sdxl-edit" {
				extra["mask"], path = extra["image"], "/v1/images/edits"
			}
		}
		return func(ctx context.Context, i int) outcome {
			body := map[string]any{"model": cfg.Model, "prompt": "a photograph of a lighthouse on a cliff at dusk", "seed": i, "number_of_images": 1}
			maps.Copy(body, extra)
			if steps > 0 {
				body["num_inference_steps"] = steps
			}
			var r struct {
				Images []string `json:"images"`
			}
			if err := post(ctx, c, path, body, &r); err != nil {
				return outcome{err: err}
			}
			if len(r.Images) != 1 {
				return outcome{err: fmt.Errorf("%d images in the answer, want 1", len(r.Images))}
			}
			return outcome{items: 1}
		}, "images_per_s_user", nil
	case "audio":
		clip := toneWAV(benchClip)
		b64 := base64.StdEncoding.EncodeToString(clip)
		return func(ctx context.Context, _ int) outcome {
			body, _ := json.Marshal(map[string]any{"model": cfg.Model, "file": b64, "stream": true})
			t0 := time.Now()
			resp, _, err := c.Stream(ctx, "/v1/audio/transcriptions", body, http.Header{"Content-Type": {"application/json"}})
			if err != nil {
				return outcome{err: err}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				return outcome{err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))}
			}
			o := outcome{audio: benchClip.Seconds()}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			done := false
			for sc.Scan() {
				if o.first == 0 {
					o.first = time.Since(t0)
				}
				var line struct {
					Done  bool            `json:"done"`
					Error json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					return outcome{err: fmt.Errorf("streamed line %q: %v", sc.Text(), err)}
				}
				if line.Error != nil {
					return outcome{err: fmt.Errorf("streamed error: %s", line.Error)}
				}
				done = done || line.Done
			}
			if err := sc.Err(); err != nil {
				return outcome{err: err}
			}
			if !done {
				return outcome{err: errors.New("the stream ended without the final transcript")}
			}
			return o
		}, "rtr", nil
	case "text_to_speech":
		text := "The quick brown fox jumps over the lazy dog while the band plays on in the summer evening light near the river."
		return func(ctx context.Context, _ int) outcome {
			wav, _, err := c.Speech(ctx, cfg.Model, text, "json")
			if err != nil {
				return outcome{err: err}
			}
			ai, err := media.ProbeWAV(wav)
			if err != nil {
				return outcome{err: fmt.Errorf("audio: %v", err)}
			}
			return outcome{audio: ai.Duration.Seconds()}
		}, "rtr", nil
	case "cnn":
		img, err := testImage()
		if err != nil {
			return nil, "", err
		}
		b64 := base64.StdEncoding.EncodeToString(img)
		return func(ctx context.Context, _ int) outcome {
			var r struct {
				Status string `json:"status"`
			}
			if err := post(ctx, c, "/v1/cnn/search-image", map[string]any{"model": cfg.Model, "prompt": b64, "top_k": 3}, &r); err != nil {
				return outcome{err: err}
			}
			if r.Status != "success" {
				return outcome{err: fmt.Errorf("status %q", r.Status)}
			}
			return outcome{items: 1}
		}, "images_per_s_user", nil
	case "embedding":
		inputs := make([]string, 16)
		for i := range inputs {
			inputs[i] = fmt.Sprintf("Passage %d: the history of lighthouses and the keepers who tended their lamps along the coast.", i)
		}
		return func(ctx context.Context, _ int) outcome {
			var r struct {
				Data  []json.RawMessage `json:"data"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := post(ctx, c, "/v1/embeddings", map[string]any{"model": cfg.Model, "input": inputs}, &r); err != nil {
				return outcome{err: err}
			}
			if len(r.Data) != len(inputs) {
				return outcome{err: fmt.Errorf("%d embeddings for %d inputs", len(r.Data), len(inputs))}
			}
			return outcome{items: len(r.Data), tokens: r.Usage.PromptTokens}
		}, "prompt_tokens_per_s_user", nil
	case "video":
		steps := 0
		if target != nil {
			steps = min(target.Steps, 50)
		}
		return func(ctx context.Context, i int) outcome {
			body := map[string]any{"model": cfg.Model, "prompt": "waves rolling onto a beach at sunset", "seed": i}
			if steps > 0 {
				body["num_inference_steps"] = steps
			}
			var job struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			// The job is created with 202 Accepted, which the client
			// counts as an error that carries the answer.
			raw, err := c.PostJSON(ctx, "/v1/videos/generations", body)
			var oe *openai.Error
			if err != nil && !(errors.As(err, &oe) && oe.Status == http.StatusAccepted) {
				return outcome{err: err}
			}
			if err := json.Unmarshal(raw, &job); err != nil || job.ID == "" {
				return outcome{err: fmt.Errorf("video job answer %q: %v", raw, err)}
			}
			// Poll at a tenth of the time so far (between 50 ms and 5 s).
			t0 := time.Now()
			for job.Status == "queued" || job.Status == "in_progress" {
				wait := min(max(time.Since(t0)/10, 50*time.Millisecond), 5*time.Second)
				select {
				case <-ctx.Done():
					return outcome{err: ctx.Err()}
				case <-time.After(wait):
				}
				raw, err := c.Get(ctx, "/v1/videos/generations/"+job.ID)
				if err != nil {
					return outcome{err: err}
				}
				if err := json.Unmarshal(raw, &job); err != nil {
					return outcome{err: fmt.Errorf("job: %v", err)}
				}
			}
			if job.Status != "completed" {
				msg := job.Status
				if job.Error != nil {
					msg += ": " + job.Error.Message
				}
				return outcome{err: fmt.Errorf("video job %s ended %s", job.ID, msg)}
			}
			return outcome{items: 1}
		}, "videos_per_s_user", nil
	}
	return nil, "", fmt.Errorf("media benchmark: %s models are not benchmarked", task)
}

func post(ctx context.Context, c *openai.Client, path string, body, v any) error {
	raw, err := c.PostJSON(ctx, path, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: decode answer: %v", path, err)
	}
	return nil
}

// toneWAV is a 16 kHz mono clip of a slowly wavering tone.
func toneWAV(d time.Duration) []byte {
	n := int(d.Seconds() * 16000)
	s := make([]int16, n)
	for i := range s {
		f := 220 + 40*math.Sin(float64(i)/16000)
		s[i] = int16(6000 * math.Sin(2*math.Pi*f*float64(i)/16000))
	}
	return media.WAV(s, 16000, 1)
}

// testImage is a 224x224 PNG, the CNNs' input size.
func testImage() ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, 224, 224))
	for y := range 224 {
		for x := range 224 {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	err := png.Encode(&buf, img)
	return buf.Bytes(), err
}
