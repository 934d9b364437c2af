// Package check runs planned spec tests (bench/spectest) against an
// OpenAI-compatible server through runtime/openai's client: each test
// sends real requests, compares what came back with what the spec
// promises, and keeps the evidence (request, expectation, answer,
// truncated) for the report. A test that cannot run says why; it never
// passes for lack of evidence.
package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// Progress follows the tests for a display (bench/release's Progress
// satisfies it).
type Progress interface {
	Step(name string, total int)
	Done(n int)
}

// Config is one run of planned tests against a server.
type Config struct {
	// Client talks to the server under test; Model is the name sent.
	Client *openai.Client
	Model  string
	// Tests is the plan (spectest.Plan).
	Tests []spectest.Test
	// Observe reads the server's restart count and pid before and after
	// the stability load (nil: not observable, as for a --url server).
	Observe spectest.Observer
	// RequestTimeout bounds one request (default 10 minutes).
	RequestTimeout time.Duration
	// Progress and Logf follow the run (nil: none).
	Progress Progress
	Logf     func(format string, a ...any)
}

// Run runs cfg's tests in order and returns one result per planned test.
// A test the plan skips is returned with its reason; when liveness fails
// the others are not run (a server that is not ready would fail them all
// for one reason). When ctx ends, the tests not finished are returned as
// not run.
func Run(ctx context.Context, cfg Config) []spectest.Result {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	e := &env{cfg: cfg}
	var out []spectest.Result
	dead := ""
	for _, t := range cfg.Tests {
		res := spectest.Result{Name: t.Name, Template: t.Template, Description: t.Description, Upstream: t.Upstream, Required: t.Required, Evidence: []spectest.Evidence{}}
		switch {
		case t.Skip != "":
			res.NotRun, res.Summary = t.Skip, "not run: "+t.Skip
		case ctx.Err() != nil:
			res.NotRun = "the run was interrupted"
			res.Summary = "not run: " + res.NotRun
		case dead != "":
			res.NotRun = dead
			res.Summary = "not run: " + dead
		default:
			fn, ok := tests[t.Template]
			if !ok {
				res.NotRun = "ttis does not implement the template " + t.Template
				res.Summary = "not run: " + res.NotRun
				break
			}
			if cfg.Progress != nil {
				cfg.Progress.Step("test "+t.Name, 1)
			}
			e.logf("spec tests: %s", t.Name)
			r := &rec{start: time.Now()}
			fn(ctx, e, t, r)
			res = r.result(res)
			if ctx.Err() != nil && res.Verdict != spectest.Fail {
				res.Verdict, res.NotRun = "", "the run was interrupted"
				res.Summary = "not run: " + res.NotRun
			}
			if cfg.Progress != nil {
				cfg.Progress.Done(1)
			}
			if t.Template == "liveness" && res.Verdict == spectest.Fail {
				dead = "the server failed liveness: " + res.Summary
			}
		}
		out = append(out, res)
	}
	return out
}

// tests maps a template (units/catalog's spectests.json) to its check.
var tests = map[string]func(ctx context.Context, e *env, t spectest.Test, r *rec){
	"liveness":           liveness,
	"stability":          stability,
	"stream_agrees":      streamAgrees,
	"max_tokens":         maxTokens,
	"stop":               stop,
	"n":                  nChoices,
	"seed":               seed,
	"logprobs":           logprobs,
	"temperature_0":      temperature0,
	"context_length":     contextLength,
	"context_full":       contextFull,
	"concurrency":        concurrency,
	"structured_outputs": structuredOutputs,
	"tool_calls":         toolCalls,
	"image_steps":        imageSteps,
	"image_guidance":     imageGuidance,
	"image_sizes":        imageSizes,
	"image_count":        imageCount,
	"image_seed":         imageSeed,
	"transcribe_formats": transcribeFormats,
	"transcribe_lengths": transcribeLengths,
	"transcribe_reject":  transcribeReject,
	"speech_formats":     speechFormats,
	"speech_text":        speechText,
	"cnn_top_k":          cnnTopK,
	"cnn_formats":        cnnFormats,
	"embedding_params":   embeddingParams,
	"video_steps":        videoSteps,
}

// Templates lists the templates this package implements.
func Templates() []string {
	out := make([]string, 0, len(tests))
	for k := range tests {
		out = append(out, k)
	}
	return out
}

type env struct {
	cfg Config
}

func (e *env) logf(format string, a ...any) {
	if e.cfg.Logf != nil {
		e.cfg.Logf(format, a...)
	}
}

// rec collects one test's checks; it is safe for concurrent use.
type rec struct {
	mu       sync.Mutex
	start    time.Time
	passes   []spectest.Evidence
	fails    []spectest.Evidence
	requests int
	failed   int
	notRun   string
	note     string
}

// check records one check and reports whether it passed.
func (r *rec) check(ok bool, ev spectest.Evidence) bool {
	ev.Pass = ok
	ev.Request = spectest.Truncate(ev.Request, spectest.MaxField)
	ev.Expected = spectest.Truncate(ev.Expected, spectest.MaxField)
	ev.Got = spectest.Truncate(ev.Got, spectest.MaxField)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.passes = append(r.passes, ev)
	} else {
		r.fails = append(r.fails, ev)
	}
	return ok
}

// sent counts a request and whether it failed.
func (r *rec) sent(failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if failed {
		r.failed++
	}
}

// cannot ends the test as not run: something it needs is missing (not a
// broken promise).
func (r *rec) cannot(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notRun = why
}

// say adds a line to the summary (what the test measured).
func (r *rec) say(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.note != "" {
		r.note += "; "
	}
	r.note += fmt.Sprintf(format, a...)
}

func (r *rec) result(res spectest.Result) spectest.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Requests, res.Failed = r.requests, r.failed
	res.DurationS = time.Since(r.start).Seconds()
	ev := append(append([]spectest.Evidence{}, r.fails...), r.passes...)
	if len(ev) > spectest.MaxEvidence {
		// Keep every kind of failure seen first, then what passed.
		ev = ev[:spectest.MaxEvidence]
	}
	res.Evidence = ev
	switch {
	case len(r.fails) > 0:
		res.Verdict = spectest.Fail
		f := r.fails[0]
		res.Summary = fmt.Sprintf("%d of %d %s failed; first: %s: expected %s, got %s", len(r.fails), len(r.fails)+len(r.passes), checks(len(r.fails)+len(r.passes)), f.Check, f.Expected, f.Got)
	case r.notRun != "":
		res.NotRun = r.notRun
		res.Summary = "not run: " + r.notRun
	case len(r.passes) == 0:
		// A test that checked nothing proves nothing.
		res.NotRun = "no check was made"
		res.Summary = "not run: " + res.NotRun
	default:
		res.Verdict = spectest.Pass
		res.Summary = fmt.Sprintf("%d %s passed", len(r.passes), checks(len(r.passes)))
	}
	if r.note != "" {
		res.Summary += " (" + r.note + ")"
	}
	res.Summary = spectest.Truncate(res.Summary, 2*spectest.MaxField)
	return res
}

func checks(n int) string {
	if n == 1 {
		return "check"
	}
	return "checks"
}

// answer is a server's reply: its status, content type and body (up to
// maxAnswer bytes), or the transport error that kept it from coming.
type answer struct {
	status int
	ctype  string
	body   []byte
	err    error
}

// blobs are the long base64 strings of an answer (images, audio), which
// evidence names by their length.
var blobs = regexp.MustCompile(`"[A-Za-z0-9+/=]{256,}"`)

// maxAnswer bounds a reply read into memory (an image or a clip).
const maxAnswer = 64 << 20

// describe is the reply in words, for evidence.
func (a answer) describe() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	if len(a.body) == 0 {
		return fmt.Sprintf("HTTP %d (empty body)", a.status)
	}
	body := blobs.ReplaceAllStringFunc(string(a.body), func(m string) string {
		return fmt.Sprintf(`"<%d base64 bytes>"`, len(m)-2)
	})
	if !strings.HasPrefix(a.ctype, "application/json") && !strings.HasPrefix(a.ctype, "text/") && !json.Valid(a.body) {
		body = fmt.Sprintf("%d bytes of %s", len(a.body), a.ctype)
	}
	return fmt.Sprintf("HTTP %d: %s", a.status, body)
}

// ok reports a 200 (or, for a job the server queued, a 202).
func (a answer) ok() bool {
	return a.err == nil && (a.status == http.StatusOK || a.status == http.StatusAccepted)
}

// refused reports an answer that turns the request down as invalid: a
// 4xx other than those about the caller's rights or the server's load.
func (a answer) refused() bool {
	if a.err != nil || a.status < 400 || a.status > 499 {
		return false
	}
	switch a.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests, http.StatusRequestTimeout:
		return false
	}
	return true
}

// message is the error message of a refusal.
func (a answer) message() string { return openai.ErrorMessage(a.body) }

// post sends body (JSON) to path and reads whatever comes back.
func (e *env) post(ctx context.Context, path string, body any) answer {
	b, err := json.Marshal(body)
	if err != nil {
		return answer{err: err}
	}
	return e.postRaw(ctx, path, b, nil)
}

func (e *env) postRaw(ctx context.Context, path string, body []byte, h http.Header) answer {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	if h == nil {
		h = http.Header{}
	}
	// Stream sends any POST and hands back the open answer whatever its
	// status; a JSON answer is asked for.
	h.Set("Accept", "application/json")
	resp, _, err := e.cfg.Client.Stream(ctx, path, body, h)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return answer{status: resp.StatusCode, err: fmt.Errorf("read answer: %w", err)}
	}
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

// get sends a GET to path.
func (e *env) get(ctx context.Context, path string) answer {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	resp, err := e.cfg.Client.Fetch(ctx, path)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return answer{status: resp.StatusCode, err: fmt.Errorf("read answer: %w", err)}
	}
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

// streamed is what a server-sent-event stream of a completion carried.
type streamed struct {
	status           int
	text             string
	finish           string
	completionTokens int
	hasUsage         bool
	err              error
}

func (s streamed) describe() string {
	if s.err != nil {
		return s.err.Error()
	}
	return fmt.Sprintf("text %q, finish_reason %q", s.text, s.finish)
}

// stream sends a streamed completion request and joins its deltas
// (choice 0).
func (e *env) stream(ctx context.Context, path string, body map[string]any) streamed {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	b, err := json.Marshal(body)
	if err != nil {
		return streamed{err: err}
	}
	resp, _, err := e.cfg.Client.Stream(ctx, path, b, nil)
	if err != nil {
		return streamed{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamed{status: resp.StatusCode, err: errors.New(openai.HTTPError(resp))}
	}
	out := streamed{status: resp.StatusCode}
	rd := openai.NewReader(resp.Body, 32<<10)
	var text strings.Builder
	var ch openai.Chunk
	for {
		data, _, err := rd.Next()
		if err == io.EOF {
			out.err = errors.New("the stream ended without [DONE]")
			break
		}
		if err != nil {
			out.err = fmt.Errorf("read stream: %w", err)
			break
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			break
		}
		if err := openai.ParseChunk(data, &ch); err != nil {
			out.err = fmt.Errorf("chunk %q: %w", spectest.Truncate(string(data), 200), err)
			break
		}
		if ch.Error != "" {
			out.err = errors.New("error in the stream: " + ch.Error)
			break
		}
		if ch.HasChoices {
			text.Write(ch.Text)
			if ch.FinishReason != "" {
				out.finish = ch.FinishReason
			}
		}
		if ch.HasUsage {
			out.hasUsage, out.completionTokens = true, ch.CompletionTokens
		}
	}
	out.text = text.String()
	return out
}

// lines sends a request whose answer is newline-delimited JSON (a
// streamed transcription) and returns its lines.
func (e *env) lines(ctx context.Context, path string, body any) (int, [][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	resp, _, err := e.cfg.Client.Stream(ctx, path, b, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, errors.New(openai.HTTPError(resp))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var out [][]byte
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, bytes.Clone(l))
		}
	}
	return resp.StatusCode, out, sc.Err()
}

// compact renders a request body for evidence (long arrays are cut by
// Truncate when the evidence is recorded).
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// parallel runs fn(i) for i in [0, n) with n goroutines and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}
