// Package client is the benchmark's load client: it sends one streamed
// completion or chat request through runtime/openai's client and times every
// token-bearing chunk, keeping the raw per-request record vLLM's benchmark
// keeps.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// Config says how to send requests.
type Config struct {
	// BaseURL is the server's root ("http://127.0.0.1:8000"); a trailing
	// "/v1" is accepted and dropped.
	BaseURL string
	API     openai.API
	// Model is sent in the "model" field.
	Model string
	// Header is added to every request (Authorization, ...).
	Header http.Header
	// IgnoreEOS sends "ignore_eos": true so every request runs to its
	// max_tokens.
	IgnoreEOS bool
	// ContinuousUsage asks for usage on every chunk
	// (stream_options.continuous_usage_stats, a vLLM extension) so that
	// chunks carrying several tokens are counted right.
	ContinuousUsage bool
	// ExtraBody is merged into every request body (sampling options ...).
	// Without a "temperature" in it, requests ask for greedy decoding
	// (DefaultTemperature).
	ExtraBody map[string]any
	// RequestTimeout bounds one request (0: no bound beyond the context).
	RequestTimeout time.Duration
}

// Server opens the protocol client for cfg's server, keeping up to conns
// connections.
func (cfg Config) Server(conns int) (*openai.Client, error) {
	return openai.New(openai.Config{BaseURL: cfg.BaseURL, Header: cfg.Header, MaxConns: conns})
}

// TextCounter counts the tokens of generated text when the server sent no
// usage; it is satisfied by *openai.Tokenizer.
type TextCounter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// Client sends benchmark requests. It is safe for concurrent use.
type Client struct {
	cfg     Config
	srv     *openai.Client
	counter TextCounter
	// noContinuousUsage is set once the server has rejected
	// continuous_usage_stats; later requests leave it out.
	noContinuousUsage atomic.Bool
}

// New builds a Client that sends through srv (see Config.Server). counter
// may be nil.
func New(srv *openai.Client, cfg Config, counter TextCounter) (*Client, error) {
	if cfg.API == "" {
		cfg.API = openai.Completions
	}
	if cfg.Model == "" {
		return nil, errors.New("client: model is empty")
	}
	return &Client{cfg: cfg, srv: srv, counter: counter}, nil
}

// BaseURL returns the normalized server root.
func (c *Client) BaseURL() string { return c.srv.BaseURL() }

// Prompt is one request's input.
type Prompt struct {
	// Text is the prompt (completions) or the user message (chat).
	Text string
	// PromptTokens is the dataset's token count, used when the server
	// reports no usage.
	PromptTokens int
	// OutputTokens is max_tokens.
	OutputTokens int
}

// DefaultTemperature is sent when ExtraBody names no temperature: greedy
// decoding, as vLLM's benchmark_serving does, so that every server measured
// runs the same sampler. Left to themselves, servers sample differently
// (OpenAI's default is temperature 1 over the whole vocabulary,
// llama-server's a top-k/top-p/min-p chain at 0.8), and a sampler over a
// large vocabulary per token is part of what a run would then measure.
const DefaultTemperature = 0.0

// Sampling returns the fields of ExtraBody that every request carries,
// with the default temperature filled in: what a result records as its
// sampling parameters.
func (cfg Config) Sampling() map[string]any {
	m := make(map[string]any, len(cfg.ExtraBody)+1)
	for k, v := range cfg.ExtraBody {
		m[k] = v
	}
	if _, ok := m["temperature"]; !ok {
		m["temperature"] = DefaultTemperature
	}
	return m
}

// body renders the request JSON; continuous asks for per-chunk usage.
func (c *Client) body(p Prompt, continuous bool) ([]byte, error) {
	m := c.cfg.Sampling()
	m["model"] = c.cfg.Model
	m["stream"] = true
	so := map[string]any{"include_usage": true}
	if continuous {
		so["continuous_usage_stats"] = true
	}
	m["stream_options"] = so
	if c.cfg.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if c.cfg.API == openai.Chat {
		m["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
		m["max_completion_tokens"] = p.OutputTokens
	} else {
		m["prompt"] = p.Text
		m["max_tokens"] = p.OutputTokens
	}
	return json.Marshal(m)
}

// Do sends one streamed request and returns its raw record. StartS and
// ArrivalS are left for the caller; chunk times are measured from the
// moment just before the request is written. Failures are recorded in the
// result (Success false, Error set), never returned.
func (c *Client) Do(ctx context.Context, p Prompt, requestID string) metrics.Request {
	// Whether this request asks is decided once: with several in flight,
	// another may learn the server's refusal while this one is on the wire,
	// and this one must still be sent again.
	continuous := c.cfg.ContinuousUsage && !c.noContinuousUsage.Load()
	rec := c.do(ctx, p, requestID, continuous)
	if !rec.Success && continuous &&
		strings.HasPrefix(rec.Error, "HTTP 400") && strings.Contains(rec.Error, "continuous_usage_stats") {
		// The server does not do per-chunk usage: fall back to counting
		// chunks, for this and every later request.
		c.noContinuousUsage.Store(true)
		rec = c.do(ctx, p, requestID, false)
	}
	return rec
}

func (c *Client) do(ctx context.Context, p Prompt, requestID string, continuous bool) metrics.Request {
	rec := metrics.Request{PromptTokens: p.PromptTokens}
	body, err := c.body(p, continuous)
	if err != nil {
		rec.Error = "encode request: " + err.Error()
		return rec
	}
	if c.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	var extra http.Header
	if requestID != "" {
		extra = http.Header{"X-Request-Id": {requestID}}
	}
	start := time.Now()
	resp, retried, err := c.srv.Stream(ctx, c.cfg.API.Path(), body, extra)
	rec.Retried = retried
	if err != nil {
		rec.Error = "request failed: " + err.Error()
		return rec
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rec.Error = openai.HTTPError(resp)
		return rec
	}
	sr := readerPool(resp.Body)
	c.readStream(ctx, sr, start, &rec)
	if rec.Success {
		// Drain so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	}
	return rec
}

// readerPool builds a stream reader; a fresh one per request keeps the
// client free of shared mutable state (the allocation is per request, not
// per chunk).
func readerPool(r io.Reader) *openai.Reader { return openai.NewReader(r, 32<<10) }

// readStream consumes the SSE body and fills rec.
func (c *Client) readStream(ctx context.Context, sr *openai.Reader, start time.Time, rec *metrics.Request) {
	var (
		ch            openai.Chunk
		text          []byte
		usageSeen     bool
		usagePrompt   int
		usageComplete int
		prevComplete  int
		perChunkUsage = true
		tokenChunks   int
		done          bool
		// chunkBytes is each token chunk's text length, for spreading
		// usage over chunks when the server gives no per-chunk counts.
		chunkBytes []int
	)
	for !done {
		data, _, err := sr.Next()
		now := time.Since(start).Seconds()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				rec.Error = "stream ended before [DONE]"
			case ctx.Err() != nil:
				rec.Error = "request cancelled or timed out: " + ctx.Err().Error()
			default:
				rec.Error = "read stream: " + err.Error()
			}
			break
		}
		if len(data) == 6 && string(data) == "[DONE]" {
			done = true
			break
		}
		if err := openai.ParseChunk(data, &ch); err != nil {
			rec.Error = fmt.Sprintf("malformed SSE chunk %q: %v", truncate(data, 120), err)
			return
		}
		if ch.Error != "" {
			rec.Error = "server error in stream: " + ch.Error
			return
		}
		if ch.HasTimings {
			t := ch.Timings
			rec.ServerTimings = &t
		}
		if ch.HasUsage {
			usageSeen = true
			usagePrompt, usageComplete = ch.PromptTokens, ch.CompletionTokens
		}
		if !ch.HasChoices {
			continue
		}
		var k int
		if ch.HasUsage {
			k = ch.CompletionTokens - prevComplete
			prevComplete = ch.CompletionTokens
		} else {
			perChunkUsage = false
			if ch.HasText && !ch.RoleOnly {
				k = 1
			}
		}
		text = append(text, ch.Text...)
		if k <= 0 {
			continue
		}
		tokenChunks++
		rec.ChunkTimesS = append(rec.ChunkTimesS, now)
		rec.ChunkTokens = append(rec.ChunkTokens, k)
		chunkBytes = append(chunkBytes, len(ch.Text))
	}
	rec.GeneratedText = string(text)
	if !done {
		return
	}
	if tokenChunks == 0 {
		rec.Error = "never received a token"
		return
	}
	if perChunkUsage {
		rec.ChunkTokensSource = metrics.SourceUsage
	} else {
		rec.ChunkTokensSource = "one-per-chunk"
	}
	switch {
	case usageSeen:
		rec.OutputTokens, rec.OutputTokensSource = usageComplete, metrics.SourceUsage
		if usagePrompt > 0 {
			rec.PromptTokens = usagePrompt
		}
		if !perChunkUsage && usageComplete > tokenChunks {
			// Some chunks carried several tokens (speculative decoding,
			// detokenizer hold-back) but the server did not say which:
			// share the surplus by chunk text length.
			spreadTokens(rec.ChunkTokens, chunkBytes, usageComplete)
			rec.ChunkTokensSource = "estimated-from-text"
		}
	case c.counter != nil:
		n, err := c.counter.CountTokens(ctx, rec.GeneratedText)
		if err == nil {
			rec.OutputTokens, rec.OutputTokensSource = n, metrics.SourceTokenize
			break
		}
		fallthrough
	default:
		n := 0
		for _, k := range rec.ChunkTokens {
			n += k
		}
		rec.OutputTokens, rec.OutputTokensSource = n, metrics.SourceChunks
	}
	rec.Success = true
}

// spreadTokens raises counts (one per chunk) so they sum to total, giving
// the surplus to chunks in proportion to their text length (largest
// remainder; equal shares when no chunk has text).
func spreadTokens(counts, textLen []int, total int) {
	have := 0
	for _, k := range counts {
		have += k
	}
	extra := total - have
	if extra <= 0 || len(counts) == 0 {
		return
	}
	weights := make([]float64, len(counts))
	sum := 0.0
	for i, n := range textLen {
		weights[i] = float64(n)
		sum += weights[i]
	}
	if sum == 0 {
		for i := range weights {
			weights[i] = 1
		}
		sum = float64(len(weights))
	}
	type rem struct {
		i    int
		frac float64
	}
	rems := make([]rem, len(counts))
	given := 0
	for i, w := range weights {
		share := float64(extra) * w / sum
		whole := int(share)
		counts[i] += whole
		given += whole
		rems[i] = rem{i, share - float64(whole)}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac > rems[b].frac })
	for j := 0; given < extra; j = (j + 1) % len(rems) {
		counts[rems[j].i]++
		given++
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
