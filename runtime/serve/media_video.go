package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// Video generation runs as jobs, as tt-media-server's asynchronous video
// API does: POST /v1/videos/generations answers 202 with the job, GET
// /v1/videos/generations/{id} its state, GET .../{id}/download the MP4,
// POST .../{id}/cancel cancels it, GET /v1/videos/jobs lists them. A job
// queues for a slot like any request (429 when the queue is full) and
// holds it while it runs. The server keeps the last maxVideoJobs jobs and
// their videos in memory; older finished ones are dropped.

const maxVideoJobs = 16

// Job states (tt-media-server's JobStatus).
const (
	jobQueued     = "queued"
	jobInProgress = "in_progress"
	jobCompleted  = "completed"
	jobFailed     = "failed"
	jobCancelled  = "cancelled"
)

type videoJob struct {
	id        string
	created   int64
	params    map[string]any
	cancel    context.CancelFunc
	status    string
	completed int64
	err       string
	video     *runtime.Video
}

// videoJobs are a server's video jobs, oldest first.
type videoJobs struct {
	mu   sync.Mutex
	list []*videoJob
}

func (j *videoJob) public(model string) map[string]any {
	v := map[string]any{"id": j.id, "object": "video", "job_type": "video", "status": j.status, "created_at": j.created, "model": model, "request_parameters": j.params}
	if j.completed != 0 {
		v["completed_at"] = j.completed
	}
	if j.err != "" {
		v["error"] = map[string]string{"code": "generation_failed", "message": j.err}
	}
	return v
}

// add records a job, dropping the oldest finished jobs beyond the limit;
// it fails when every kept job is still running.
func (v *videoJobs) add(j *videoJob) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for len(v.list) >= maxVideoJobs {
		i := slices.IndexFunc(v.list, func(j *videoJob) bool {
			return j.status == jobCompleted || j.status == jobFailed || j.status == jobCancelled
		})
		if i < 0 {
			return false
		}
		v.list = slices.Delete(v.list, i, i+1)
	}
	v.list = append(v.list, j)
	return true
}

func (v *videoJobs) find(id string) *videoJob {
	for _, j := range v.list {
		if j.id == id {
			return j
		}
	}
	return nil
}

type videoBody struct {
	Model             string  `json:"model"`
	Prompt            *string `json:"prompt"`
	NegativePrompt    string  `json:"negative_prompt"`
	NumInferenceSteps *int    `json:"num_inference_steps"`
	Seed              *int64  `json:"seed"`
	AspectRatio       string  `json:"aspect_ratio"`
	DurationSeconds   *int    `json:"duration_seconds"`
}

// videos serves the video routes under /v1/videos.
func (h *mediaHandler) videos() {
	s, path := h.s, h.path
	model := s.cfg.Model
	switch {
	case path == "/v1/videos/generations":
		h.submitVideo()
	case path == "/v1/videos/jobs":
		s.videoJobs.mu.Lock()
		out := make([]any, len(s.videoJobs.list))
		for i, j := range s.videoJobs.list {
			out[i] = j.public(model)
		}
		s.videoJobs.mu.Unlock()
		writeJSON(h.ctx, out)
	default:
		rest := strings.TrimPrefix(path, "/v1/videos/generations/")
		id, action, _ := strings.Cut(rest, "/")
		s.videoJobs.mu.Lock()
		j := s.videoJobs.find(id)
		var snap map[string]any
		var video *runtime.Video
		var status string
		if j != nil {
			snap, video, status = j.public(model), j.video, j.status
			if action == "cancel" && (status == jobQueued || status == jobInProgress) {
				j.cancel()
				j.status, j.completed = jobCancelled, time.Now().Unix()
				snap = j.public(model)
			}
		}
		s.videoJobs.mu.Unlock()
		switch {
		case j == nil:
			h.fail(notFound("id", fmt.Sprintf("video job %q not found", id)))
		case action == "":
			writeJSON(h.ctx, snap)
		case action == "cancel":
			writeJSON(h.ctx, snap)
		case action == "download":
			if status != jobCompleted || video == nil {
				h.fail(notFound("id", fmt.Sprintf("video job %s is %s; its video is not available", id, status)))
				return
			}
			h.ctx.SetContentType("video/mp4")
			h.ctx.Response.Header.Set("Content-Disposition", "attachment; filename="+id+".mp4")
			h.ctx.SetBody(video.MP4)
		default:
			h.fail(notFound("", "no route for "+path))
		}
	}
}

// videoMethod is the method a video route takes ("" for no such route).
func videoMethod(path string) string {
	switch {
	case path == "/v1/videos/generations":
		return "POST"
	case path == "/v1/videos/jobs":
		return "GET"
	case strings.HasPrefix(path, "/v1/videos/generations/"):
		rest := strings.TrimPrefix(path, "/v1/videos/generations/")
		id, action, _ := strings.Cut(rest, "/")
		if id == "" {
			return ""
		}
		switch action {
		case "", "download":
			return "GET"
		case "cancel":
			return "POST"
		}
	}
	return ""
}

func (h *mediaHandler) submitVideo() {
	var b videoBody
	if !h.decode(&b) || !h.checkModel(b.Model) {
		return
	}
	if b.Prompt == nil || strings.TrimSpace(*b.Prompt) == "" {
		h.fail(badRequest("prompt", "prompt is required and must not be empty"))
		return
	}
	if len(*b.Prompt) > maxPromptBytes || len(b.NegativePrompt) > maxPromptBytes {
		h.fail(badRequest("prompt", "prompts are limited to %d bytes", maxPromptBytes))
		return
	}
	req := &runtime.VideoRequest{ID: h.reqID, Prompt: *b.Prompt, NegativePrompt: b.NegativePrompt, Steps: h.mi.DefaultSteps}
	params := map[string]any{"prompt": *b.Prompt}
	if b.NumInferenceSteps != nil {
		if n := *b.NumInferenceSteps; n < h.mi.MinSteps || n > h.mi.MaxSteps {
			h.fail(badRequest("num_inference_steps", "num_inference_steps must be between %d and %d, got %d", h.mi.MinSteps, h.mi.MaxSteps, n))
			return
		}
		req.Steps = *b.NumInferenceSteps
	}
	params["num_inference_steps"] = req.Steps
	if b.Seed != nil {
		req.Seed, req.HasSeed = *b.Seed, true
		params["seed"] = *b.Seed
	}
	if b.DurationSeconds != nil {
		if d := *b.DurationSeconds; d < 1 || d > 60 {
			h.fail(badRequest("duration_seconds", "duration_seconds must be between 1 and 60, got %d", d))
			return
		}
		req.DurationSeconds = *b.DurationSeconds
		params["duration_seconds"] = req.DurationSeconds
	}
	if b.AspectRatio != "" && b.AspectRatio != "16:9" {
		h.fail(badRequest("aspect_ratio", "aspect_ratio %q is not supported; this model generates 16:9 (832x480)", b.AspectRatio))
		return
	}
	gen, ok := h.impl.(runtime.VideoGenerator)
	if !ok {
		h.fail(notFound("", "this unit's engine does not generate videos"))
		return
	}
	s := h.s
	acquire, ok := s.queueMedia(h.ctx)
	if !ok {
		return
	}
	lv := *s.live.Load()
	var jctx context.Context
	var cancel context.CancelFunc
	if lv.RequestTimeout > 0 {
		jctx, cancel = context.WithTimeout(s.genCtx, lv.RequestTimeout)
	} else {
		jctx, cancel = context.WithCancel(s.genCtx)
	}
	j := &videoJob{id: "video-" + newID(), created: time.Now().Unix(), params: params, cancel: cancel, status: jobQueued}
	if !s.videoJobs.add(j) {
		cancel()
		acquire(nil)
		retryAfter(h.ctx, 5*time.Second)
		h.fail(&apiError{Status: fasthttp.StatusTooManyRequests, Type: "RateLimitError", Message: fmt.Sprintf("%d video jobs are still running; retry later", maxVideoJobs)})
		return
	}
	set := func(f func()) {
		s.videoJobs.mu.Lock()
		defer s.videoJobs.mu.Unlock()
		if j.status != jobCancelled {
			f()
		}
	}
	go func() {
		defer cancel()
		release, err := acquire(jctx)
		if err != nil {
			set(func() {
				j.status, j.err, j.completed = jobFailed, s.mediaError(err, lv.RequestTimeout).Message, time.Now().Unix()
			})
			return
		}
		set(func() { j.status = jobInProgress })
		v, err := gen.GenerateVideo(jctx, req)
		release(err)
		if err != nil {
			set(func() {
				j.status, j.err, j.completed = jobFailed, s.mediaError(err, lv.RequestTimeout).Message, time.Now().Unix()
			})
			return
		}
		set(func() { j.status, j.video, j.completed = jobCompleted, v, time.Now().Unix() })
	}()
	s.videoJobs.mu.Lock()
	snap := j.public(s.cfg.Model)
	s.videoJobs.mu.Unlock()
	writeJSON(h.ctx, snap)
	h.ctx.SetStatusCode(fasthttp.StatusAccepted)
}

// queueMedia admits a job: it takes a slot now or a place in the wait
// queue (429 when full, answered here). The returned acquire waits for
// the slot (with a nil context it gives the reservation back); its
// release ends the job's hold.
func (s *Server) queueMedia(ctx *fasthttp.RequestCtx) (acquire func(context.Context) (func(error), error), ok bool) {
	arrival := time.Now()
	queued, lv, ok := s.takeSlots(1)
	if !ok {
		s.refuseBusy(ctx, lv)
		return nil, false
	}
	return func(c context.Context) (func(error), error) {
		if c == nil { // give the reservation back
			if queued {
				s.m.waiting.Add(-1)
			} else {
				s.releaseSlots(1)
			}
			return nil, nil
		}
		if queued {
			if err := s.awaitSlots(c, 1); err != nil {
				return nil, err
			}
		}
		return s.holdMediaSlot(arrival), nil
	}, true
}
