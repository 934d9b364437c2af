package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// livenessAnswer is tt-media-server's GET /tt-liveness.
type livenessAnswer struct {
	Status     string                    `json:"status"`
	ModelReady *bool                     `json:"model_ready"`
	WorkerInfo map[string]livenessWorker `json:"worker_info"`
}

type livenessWorker struct {
	IsAlive      bool `json:"is_alive"`
	IsReady      bool `json:"is_ready"`
	RestartCount int  `json:"restart_count"`
	ErrorCount   int  `json:"error_count"`
}

// workerTotals sums the workers' restarts and errors.
func (l livenessAnswer) workerTotals() (restarts, errors int) {
	for _, w := range l.WorkerInfo {
		restarts += w.RestartCount
		errors += w.ErrorCount
	}
	return restarts, errors
}

// pollEvery is the wait between readiness probes.
const pollEvery = 2 * time.Second

// waitReady probes path until ready says the answer is one or the timeout
// passes; it returns the last answer.
func (e *env) waitReady(ctx context.Context, path string, timeout time.Duration, ready func(answer) bool) answer {
	deadline := time.Now().Add(timeout)
	for {
		a := e.get(ctx, path)
		if ready(a) || time.Now().After(deadline) || ctx.Err() != nil {
			return a
		}
		select {
		case <-ctx.Done():
			return a
		case <-time.After(pollEvery):
		}
	}
}

func liveness(ctx context.Context, e *env, t spectest.Test, r *rec) {
	timeout := t.Params.LivenessTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	if t.Params.Class != "text" {
		mediaLiveness(ctx, e, t, r, timeout)
		return
	}
	a := e.waitReady(ctx, "/health", timeout, func(a answer) bool { return a.err == nil && a.status == http.StatusOK })
	r.sent(a.err != nil || a.status != http.StatusOK)
	if !r.check(a.err == nil && a.status == http.StatusOK, spectest.Evidence{Check: "GET /health", Request: "GET /health",
		Expected: fmt.Sprintf("HTTP 200 within %s", timeout), Got: a.describe()}) {
		return
	}
	cards, err := e.cfg.Client.Models(ctx)
	r.sent(err != nil)
	var ids []string
	for _, c := range cards {
		ids = append(ids, c.ID)
	}
	got := "models " + strings.Join(ids, ", ")
	if err != nil {
		got = err.Error()
	}
	r.check(err == nil && slices.Contains(ids, e.cfg.Model), spectest.Evidence{Check: "GET /v1/models", Request: "GET /v1/models",
		Expected: fmt.Sprintf("the served model %q listed", e.cfg.Model), Got: got})
}

func (e *env) livenessOf(ctx context.Context) (livenessAnswer, answer, error) {
	a := e.get(ctx, "/tt-liveness")
	var l livenessAnswer
	if !a.ok() {
		return l, a, fmt.Errorf("%s", a.describe())
	}
	if err := json.Unmarshal(a.body, &l); err != nil {
		return l, a, fmt.Errorf("not JSON: %v: %s", err, a.describe())
	}
	return l, a, nil
}

func mediaLiveness(ctx context.Context, e *env, t spectest.Test, r *rec, timeout time.Duration) {
	ready := func(a answer) bool {
		var l livenessAnswer
		return a.ok() && json.Unmarshal(a.body, &l) == nil && l.ModelReady != nil && *l.ModelReady
	}
	a := e.waitReady(ctx, "/tt-liveness", timeout, ready)
	r.sent(!a.ok())
	var l livenessAnswer
	err := json.Unmarshal(a.body, &l)
	if !r.check(a.ok() && err == nil && l.Status == "alive" && l.ModelReady != nil && *l.ModelReady, spectest.Evidence{Check: "GET /tt-liveness",
		Request: "GET /tt-liveness", Expected: fmt.Sprintf("HTTP 200, status alive, model_ready true within %s", timeout), Got: a.describe()}) {
		return
	}
	var notReady []string
	for id, w := range l.WorkerInfo {
		if !w.IsAlive || !w.IsReady {
			notReady = append(notReady, fmt.Sprintf("worker %s alive %v ready %v", id, w.IsAlive, w.IsReady))
		}
	}
	slices.Sort(notReady)
	want := "at least one worker, every one alive and ready"
	if t.Params.Workers > 0 {
		want = fmt.Sprintf("the catalog layout's %d workers, every one alive and ready", t.Params.Workers)
	}
	ok := len(l.WorkerInfo) > 0 && len(notReady) == 0 && (t.Params.Workers == 0 || len(l.WorkerInfo) == t.Params.Workers)
	r.check(ok, spectest.Evidence{Check: "device workers", Request: "GET /tt-liveness", Expected: want,
		Got: gotOr(notReady, fmt.Sprintf("%d workers, all alive and ready", len(l.WorkerInfo)))})
}

func stability(ctx context.Context, e *env, t spectest.Test, r *rec) {
	d, load := t.Params.Duration, max(t.Params.Load, 1)
	if d <= 0 {
		r.cannot("no duration for the steady load")
		return
	}
	send, what := e.loadRequest(t)
	if send == nil {
		r.cannot("no load request for " + t.Params.Class + " models")
		return
	}
	var before spectest.ServerState
	var beforeErr error
	if e.cfg.Observe != nil {
		before, beforeErr = e.cfg.Observe(ctx)
	}
	media := t.Params.Class != "text"
	var lBefore livenessAnswer
	var lBeforeErr error
	if media {
		lBefore, _, lBeforeErr = e.livenessOf(ctx)
	}

	// A closed loop of load workers, each sending its next request as
	// soon as the last one answered, until the deadline; requests in
	// flight at the deadline are awaited.
	var sent, failed atomic.Int64
	var mu sync.Mutex
	var firstErrors []string
	start := time.Now()
	deadline := start.Add(d)
	parallel(load, func(w int) {
		for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
			err := send(ctx, w*1_000_000+i)
			sent.Add(1)
			if err != nil && ctx.Err() == nil {
				failed.Add(1)
				mu.Lock()
				if len(firstErrors) < 3 {
					firstErrors = append(firstErrors, err.Error())
				}
				mu.Unlock()
			}
		}
	})
	took := time.Since(start)
	r.mu.Lock()
	r.requests += int(sent.Load())
	r.failed += int(failed.Load())
	r.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	got := fmt.Sprintf("%d requests in %s, %d failed", sent.Load(), took.Round(time.Millisecond), failed.Load())
	if len(firstErrors) > 0 {
		got += ": " + strings.Join(firstErrors, "; ")
	}
	r.check(sent.Load() > 0 && failed.Load() == 0, spectest.Evidence{Check: fmt.Sprintf("steady load for %s, %d at a time", d, load), Request: what,
		Expected: "every request answered, none failed", Got: got})
	r.say("%d requests over %s at %d in flight", sent.Load(), took.Round(time.Second), load)

	switch {
	case e.cfg.Observe == nil:
		r.say("restarts not observable (a --url server: no daemon to ask)")
	case beforeErr != nil:
		r.check(false, spectest.Evidence{Check: "server restarts", Request: "the daemon's unit state", Expected: "the restart count before the load", Got: beforeErr.Error()})
	default:
		after, err := e.cfg.Observe(ctx)
		got := fmt.Sprintf("restarts %d → %d, pid %d → %d", before.Restarts, after.Restarts, before.PID, after.PID)
		if err != nil {
			got = err.Error()
		}
		r.check(err == nil && after.Restarts == before.Restarts && after.PID == before.PID, spectest.Evidence{Check: "server restarts",
			Request: "the daemon's unit state before and after", Expected: "no restart: the same count and the same server pid", Got: got})
	}
	if media {
		lAfter, _, err := e.livenessOf(ctx)
		rb, eb := lBefore.workerTotals()
		ra, ea := lAfter.workerTotals()
		got := fmt.Sprintf("worker restarts %d → %d, worker errors %d → %d", rb, ra, eb, ea)
		if lBeforeErr != nil || err != nil {
			got = fmt.Sprintf("before: %v; after: %v", lBeforeErr, err)
		}
		r.check(lBeforeErr == nil && err == nil && ra == rb && ea == eb, spectest.Evidence{Check: "device worker restarts and errors",
			Request: "GET /tt-liveness before and after", Expected: "no worker restarted or erred during the load", Got: got})
	}
}

// loadRequest is the stability test's request for the model class: a
// small one of what the class serves. It returns nil for a class it does
// not know.
func (e *env) loadRequest(t spectest.Test) (func(ctx context.Context, i int) error, string) {
	m := first(t.Params.MaxTokens, 16)
	switch t.Params.Class {
	case "text":
		body := map[string]any{"model": e.cfg.Model, "messages": []map[string]string{{"role": "user", "content": storyPrompt}}, "max_tokens": m, "temperature": 0.7}
		return func(ctx context.Context, i int) error {
			b := clone(body)
			b["seed"] = i
			a := e.post(ctx, openai.Chat.Path(), b)
			if !a.ok() {
				return fmt.Errorf("%s", spectest.Truncate(a.describe(), 200))
			}
			var c chatAnswer
			if err := json.Unmarshal(a.body, &c); err != nil || len(c.Choices) == 0 {
				return fmt.Errorf("no choices: %s", spectest.Truncate(a.describe(), 200))
			}
			return nil
		}, compact(body)
	case "image":
		path, body, err := e.imageCase(t, nil)
		if err != nil {
			return nil, ""
		}
		return func(ctx context.Context, i int) error {
			b := clone(body)
			b["seed"] = i
			imgs, a := e.images(ctx, path, b)
			if len(imgs) != 1 {
				return fmt.Errorf("%d images: %s", len(imgs), spectest.Truncate(a.describe(), 200))
			}
			return nil
		}, path + " " + compact(body)
	case "audio":
		body := e.transcription(toneWAV(3), nil)
		return func(ctx context.Context, _ int) error {
			_, err := e.transcribe(ctx, body)
			return err
		}, openai.TranscriptionsPath + " " + compact(body)
	case "speech":
		body := map[string]any{"model": e.cfg.Model, "text": "The quick brown fox jumps over the lazy dog.", "response_format": "wav"}
		return func(ctx context.Context, _ int) error {
			_, err := e.speak(ctx, body)
			return err
		}, openai.SpeechPath + " " + compact(body)
	case "cnn":
		body := e.classification(1, 0, "json")
		return func(ctx context.Context, _ int) error {
			_, _, err := e.classify(ctx, body)
			return err
		}, cnnPath + " " + compact(body)
	case "embedding":
		inputs := []string{"the first passage", "the second passage", "the third passage", "the fourth passage"}
		body := map[string]any{"model": e.cfg.Model, "input": inputs, "encoding_format": "float"}
		return func(ctx context.Context, _ int) error {
			a := e.post(ctx, openai.EmbeddingsPath, body)
			if !a.ok() {
				return fmt.Errorf("%s", spectest.Truncate(a.describe(), 200))
			}
			if _, perr := openai.ParseEmbeddings(a.body, len(inputs)); perr != nil {
				return perr
			}
			return nil
		}, openai.EmbeddingsPath + " " + compact(body)
	case "video":
		body := map[string]any{"model": e.cfg.Model, "prompt": "waves rolling onto a beach at sunset"}
		if s := t.Params.Steps; s != nil {
			body["num_inference_steps"] = s.Min
		}
		return func(ctx context.Context, i int) error {
			b := clone(body)
			b["seed"] = i
			return e.video(ctx, b)
		}, videoPath + " " + compact(body)
	}
	return nil, ""
}
