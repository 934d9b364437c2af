// Package backend is the eval runner's server: it turns an evalsuite
// Instance into the request lm-evaluation-harness's local-completions or
// local-chat-completions model would send (text generation through
// /v1/completions or /v1/chat/completions, continuation log-likelihoods
// through /v1/completions with echo and logprobs), sends it with
// runtime/openai's client (retries, back-off, per-attempt timeout), and
// reads the answer back into a Response.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// Config says how a Backend asks.
type Config struct {
	// Model is the name sent; API the generation endpoint (default
	// completions); Seed is sent with every request.
	Model string
	API   openai.API
	Seed  int
	// ApplyChatTemplate sends generation requests of the completions API
	// through the server's chat template, the whole prompt (few-shot
	// examples included) as one user turn: what lm-eval's
	// local-completions does with --apply_chat_template (and without
	// --fewshot_as_multiturn), which tt-inference-server passes by default.
	// The server renders the template, since ttis has no tokenizer of its
	// own for the model. Log-likelihood requests stay raw completions.
	ApplyChatTemplate bool
	// ASR, when set, transcribes speech the server said (text-to-speech
	// tasks judged by intelligibility), asking for ASRModel.
	ASR      *openai.Client
	ASRModel string
}

// Backend answers a task's requests for one server and model.
type Backend struct {
	srv      *openai.Client
	model    string
	api      openai.API
	seed     int
	template bool
	asr      *openai.Client
	asrModel string
}

// New returns a Backend sending requests through srv as cfg says.
func New(srv *openai.Client, cfg Config) (*Backend, error) {
	if cfg.Model == "" {
		return nil, errors.New("no model name to send")
	}
	switch cfg.API {
	case "":
		cfg.API = openai.Completions
	case openai.Completions, openai.Chat:
	default:
		return nil, fmt.Errorf("unknown API %q (want completions or chat)", cfg.API)
	}
	return &Backend{srv: srv, model: cfg.Model, api: cfg.API, seed: cfg.Seed, template: cfg.ApplyChatTemplate, asr: cfg.ASR, asrModel: cfg.ASRModel}, nil
}

// API reports the generation endpoint in use.
func (c *Backend) API() openai.API { return c.api }

// Model reports the model name sent.
func (c *Backend) Model() string { return c.model }

// BaseURL reports the server root.
func (c *Backend) BaseURL() string { return c.srv.BaseURL() }

// Do answers one request; raw is the server's final response body.
func (c *Backend) Do(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	switch inst.Kind {
	case evalsuite.KindGenerate:
		switch {
		case c.api == openai.Chat:
			return c.chat(ctx, inst, inst.Messages)
		case c.template:
			return c.chat(ctx, inst, []evalsuite.Message{{Role: "user", Content: inst.Context}})
		}
		return c.complete(ctx, inst)
	case evalsuite.KindLoglikelihood:
		if c.api == openai.Chat {
			return evalsuite.Response{}, nil, &openai.Error{Kind: openai.KindUnsupported, Msg: "log-likelihood needs the completions API (chat endpoints return no prompt logprobs); use a generative task variant"}
		}
		return c.loglikelihood(ctx, inst)
	case evalsuite.KindTranscribe:
		if len(inst.Audio) == 0 {
			return evalsuite.Response{}, nil, &openai.Error{Kind: openai.KindUnsupported, Msg: "transcription request without audio"}
		}
		text, raw, err := c.srv.Transcribe(ctx, openai.NewTranscribeRequest(c.model, inst.Audio))
		if err != nil {
			return evalsuite.Response{}, raw, err
		}
		return evalsuite.Response{Text: text}, raw, nil
	case evalsuite.KindEmbed:
		vecs, _, err := c.srv.Embeddings(ctx, c.model, inst.Inputs)
		if err != nil {
			return evalsuite.Response{}, nil, err
		}
		// The vectors are kept in the Response; the raw answer (the same
		// numbers as text) is not stored twice.
		return evalsuite.Response{Embeddings: vecs}, nil, nil
	case evalsuite.KindSpeechASR:
		if c.asr == nil {
			return evalsuite.Response{}, nil, &openai.Error{Kind: openai.KindUnsupported, Msg: "judging speech needs a speech-recognition server (--asr-url)"}
		}
		wav, _, err := c.srv.Speech(ctx, c.model, inst.Context, "verbose_json")
		if err != nil {
			return evalsuite.Response{}, nil, err
		}
		// The transcript's answer is what is kept; the WAV is not.
		text, raw, err := c.asr.Transcribe(ctx, openai.NewTranscribeRequest(c.asrModel, wav))
		if err != nil {
			return evalsuite.Response{}, raw, fmt.Errorf("re-transcribing the speech: %w", err)
		}
		return evalsuite.Response{Text: text}, raw, nil
	case evalsuite.KindImage, evalsuite.KindClassify, evalsuite.KindDetect, evalsuite.KindVideo:
		if inst.Media == nil {
			return evalsuite.Response{}, nil, &openai.Error{Kind: openai.KindUnsupported, Msg: fmt.Sprintf("%s request without its route and fields", inst.Kind)}
		}
		switch inst.Kind {
		case evalsuite.KindImage:
			return c.image(ctx, inst)
		case evalsuite.KindClassify:
			return c.classify(ctx, inst)
		case evalsuite.KindDetect:
			return c.detect(ctx, inst)
		}
		return c.video(ctx, inst)
	}
	return evalsuite.Response{}, nil, &openai.Error{Kind: openai.KindUnsupported, Msg: fmt.Sprintf("request kind %q", inst.Kind)}
}

func (c *Backend) genPayload(g *evalsuite.GenKwargs) map[string]any {
	p := map[string]any{"model": c.model, "seed": c.seed, "stream": false}
	if g == nil {
		return p
	}
	p["temperature"] = g.Temperature
	if g.MaxGenToks > 0 {
		p["max_tokens"] = g.MaxGenToks
	}
	if len(g.Until) > 0 {
		p["stop"] = g.Until
	}
	return p
}

func (c *Backend) complete(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	p := c.genPayload(inst.Gen)
	p["prompt"] = inst.Context
	raw, err := c.srv.PostJSON(ctx, "/v1/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseCompletion(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseCompletion reads choices[0].text of a completions response. An
// empty text is an error of kind KindEmpty, so that it is reported rather
// than scored silently.
func ParseCompletion(raw []byte) (evalsuite.Response, *openai.Error) {
	var body openai.CompletionResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode completions response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Text == nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "completions response has no choices[0].text"}
	}
	if *body.Choices[0].Text == "" {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindEmpty, Msg: "the server generated no text"}
	}
	return evalsuite.Response{Text: *body.Choices[0].Text}, nil
}

func (c *Backend) chat(ctx context.Context, inst evalsuite.Instance, msgs []evalsuite.Message) (evalsuite.Response, json.RawMessage, error) {
	p := c.genPayload(inst.Gen)
	if stop, ok := p["stop"].([]string); ok && len(stop) > 4 {
		p["stop"] = stop[:4] // OpenAI's limit, as lm-eval truncates
	}
	if len(msgs) == 0 {
		msgs = []evalsuite.Message{{Role: "user", Content: inst.Context}}
	}
	p["messages"] = msgs
	raw, err := c.srv.PostJSON(ctx, "/v1/chat/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseChat(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseChat reads choices[0].message.content of a chat response.
func ParseChat(raw []byte) (evalsuite.Response, *openai.Error) {
	var body openai.ChatResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode chat response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Message == nil || body.Choices[0].Message.Content == nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "chat response has no choices[0].message.content"}
	}
	if *body.Choices[0].Message.Content == "" {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindEmpty, Msg: "the server generated no text"}
	}
	return evalsuite.Response{Text: *body.Choices[0].Message.Content}, nil
}

func (c *Backend) loglikelihood(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	prompt := inst.Context + inst.Continuation
	p := map[string]any{
		"model": c.model, "prompt": prompt, "temperature": 0, "max_tokens": 1,
		"logprobs": 1, "echo": true, "seed": c.seed, "stream": false,
	}
	raw, err := c.srv.PostJSON(ctx, "/v1/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseLoglikelihood(raw, utf8.RuneCountInString(inst.Context), utf8.RuneCountInString(prompt))
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseLoglikelihood reads an echo+logprobs completions response and sums
// the continuation's log-probabilities (see ContinuationLogprob).
func ParseLoglikelihood(raw []byte, ctxChars, promptChars int) (evalsuite.Response, *openai.Error) {
	var body openai.CompletionResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode completions response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Logprobs == nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: "completions response has no choices[0].logprobs (does the server support echo with logprobs?)"}
	}
	ll, greedy, err := ContinuationLogprob(*body.Choices[0].Logprobs, ctxChars, promptChars)
	if err != nil {
		return evalsuite.Response{}, &openai.Error{Kind: openai.KindBadResponse, Msg: err.Error()}
	}
	return evalsuite.Response{LogLikelihood: ll, IsGreedy: greedy}, nil
}

// ContinuationLogprob sums the log-probabilities of the echoed prompt
// tokens that belong to the continuation: those whose text offset (in
// characters) lies in [ctxChars, promptChars). Tokens at or past
// promptChars were generated and are ignored. A token that starts inside
// the context but ends inside the continuation is counted with the
// continuation, since it carries continuation text. isGreedy reports whether
// each counted token was its position's top token.
func ContinuationLogprob(lp openai.Logprobs, ctxChars, promptChars int) (ll float64, isGreedy bool, err error) {
	n := len(lp.Tokens)
	if len(lp.TokenLogprobs) != n || len(lp.TextOffset) != n {
		return 0, false, fmt.Errorf("logprobs: %d tokens, %d token_logprobs, %d text_offset", n, len(lp.TokenLogprobs), len(lp.TextOffset))
	}
	if len(lp.TopLogprobs) != 0 && len(lp.TopLogprobs) != n {
		return 0, false, fmt.Errorf("logprobs: %d tokens but %d top_logprobs", n, len(lp.TopLogprobs))
	}
	isGreedy = true
	counted := 0
	for i := range n {
		off := lp.TextOffset[i]
		end := off + utf8.RuneCountInString(lp.Tokens[i])
		if off >= promptChars || end <= ctxChars {
			continue
		}
		if lp.TokenLogprobs[i] == nil {
			return 0, false, fmt.Errorf("logprobs: continuation token %d (%q) has no logprob", i, lp.Tokens[i])
		}
		v := *lp.TokenLogprobs[i]
		if math.IsNaN(v) || v > 1e-9 {
			return 0, false, fmt.Errorf("logprobs: token %d has log-probability %v", i, v)
		}
		ll += v
		counted++
		if len(lp.TopLogprobs) == n && lp.TopLogprobs[i] != nil {
			for tok, tv := range lp.TopLogprobs[i] {
				if tok != lp.Tokens[i] && tv > v {
					isGreedy = false
				}
			}
		}
	}
	if counted == 0 {
		return 0, false, fmt.Errorf("logprobs: no echoed token covers the continuation (characters %d-%d of the prompt)", ctxChars, promptChars)
	}
	return ll, isGreedy, nil
}
