// Package evalsuite runs accuracy evaluations against OpenAI-compatible
// servers the way EleutherAI's lm-evaluation-harness does: tasks turn
// documents into requests (generate_until with few-shot context and stop
// sequences, or multiple_choice scored by log-likelihood), filters extract
// answers from responses, metrics score them, and results are aggregated
// with standard errors and written in lm-eval's layout.
//
// This package holds the task model; sub-packages hold the filters and
// metrics (filter, metric), instruction checks (ifeval), dataset readers
// (dataset), generated tasks (builtin), the task registry (tasks), the HTTP
// client (client), the runner (runner) and result files (results).
package evalsuite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// OutputType is lm-eval's output_type.
type OutputType string

// The supported output types.
const (
	GenerateUntil  OutputType = "generate_until"
	MultipleChoice OutputType = "multiple_choice"
	// Media tasks send media requests (transcription, embeddings,
	// speech) built by MediaRequests and scored by ProcessMedia, as
	// lmms-eval's audio tasks and MTEB do.
	Media OutputType = "media"
)

// Doc is one dataset row.
type Doc struct {
	// ID is the row's index in its dataset (lm-eval's doc_id).
	ID int
	// Source locates the row for error messages ("gsm8k.jsonl:12").
	Source string
	// Fields are the row's values after field mapping.
	Fields map[string]any
	// Invalid is set when the row could not be parsed; the runner reports
	// the document as errored instead of dropping it.
	Invalid error
}

// Str returns a string field, or an error naming the row and the field.
// Numbers are formatted the way Python's str() would for integral values.
func (d Doc) Str(field string) (string, error) {
	v, ok := d.Fields[field]
	if !ok || v == nil {
		return "", fmt.Errorf("%s: missing field %q", d.Source, field)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%d", int64(x)), nil
		}
		return fmt.Sprint(x), nil
	case int, int64, int32, bool:
		return fmt.Sprint(x), nil
	default:
		return "", fmt.Errorf("%s: field %q is a %T, want text", d.Source, field, v)
	}
}

// Int returns an integer field (a JSON number or a decimal string).
func (d Doc) Int(field string) (int, error) {
	v, ok := d.Fields[field]
	if !ok || v == nil {
		return 0, fmt.Errorf("%s: missing field %q", d.Source, field)
	}
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("%s: field %q = %v is not an integer", d.Source, field, x)
		}
		return int(x), nil
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case int32:
		return int(x), nil
	case string:
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(x), "%d", &n); err != nil {
			return 0, fmt.Errorf("%s: field %q = %q is not an integer", d.Source, field, x)
		}
		return n, nil
	default:
		return 0, fmt.Errorf("%s: field %q is a %T, want an integer", d.Source, field, v)
	}
}

// Strings returns a list-of-text field.
func (d Doc) Strings(field string) ([]string, error) {
	v, ok := d.Fields[field]
	if !ok || v == nil {
		return nil, fmt.Errorf("%s: missing field %q", d.Source, field)
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: field %q[%d] is a %T, want text", d.Source, field, i, e)
			}
			out[i] = s
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s: field %q is a %T, want a list of text", d.Source, field, v)
	}
}

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Images are data URLs sent with the text (vision-language tasks);
	// a message with images is written in OpenAI's content-parts form,
	// the text first, as lmms-eval's openai_compatible model sends it.
	Images []string `json:"-"`
	// Parts, when set, are the message's content parts in their own order
	// (text and images interleaved, as lmms-eval's doc_to_messages builds
	// them); Content is then their text joined, and Images is unused.
	Parts []ContentPart `json:"-"`
}

// ContentPart is one part of a chat message: text, or an image data URL.
type ContentPart struct {
	Text     string
	ImageURL string
}

// MarshalJSON writes Content as a string, or, with images, as a list of
// a text part and image_url parts.
func (m Message) MarshalJSON() ([]byte, error) {
	if len(m.Images) == 0 && len(m.Parts) == 0 {
		type plain Message
		return json.Marshal(plain(m))
	}
	type imageURL struct {
		URL string `json:"url"`
	}
	type part struct {
		Type     string    `json:"type"`
		Text     *string   `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	var parts []part
	if len(m.Parts) > 0 {
		for _, p := range m.Parts {
			if p.ImageURL != "" {
				parts = append(parts, part{Type: "image_url", ImageURL: &imageURL{URL: p.ImageURL}})
			} else {
				parts = append(parts, part{Type: "text", Text: &p.Text})
			}
		}
	} else {
		parts = []part{{Type: "text", Text: &m.Content}}
		for _, u := range m.Images {
			parts = append(parts, part{Type: "image_url", ImageURL: &imageURL{URL: u}})
		}
	}
	return json.Marshal(struct {
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{m.Role, parts})
}

// GenKwargs are a generate_until task's generation settings.
type GenKwargs struct {
	Until       []string `json:"until"`
	MaxGenToks  int      `json:"max_gen_toks"`
	Temperature float64  `json:"temperature"`
	DoSample    bool     `json:"do_sample"`
}

// RequestKind says which endpoint call an Instance needs.
type RequestKind string

// The request kinds.
const (
	KindGenerate      RequestKind = "generate_until"
	KindLoglikelihood RequestKind = "loglikelihood"
	// KindTranscribe sends Audio to a transcription endpoint; the answer
	// is the transcript in Response.Text.
	KindTranscribe RequestKind = "transcription"
	// KindEmbed sends Inputs to an embeddings endpoint; the answer is
	// one vector per input in Response.Embeddings.
	KindEmbed RequestKind = "embedding"
	// KindSpeechASR asks a speech endpoint to say Context and has the
	// speech transcribed by a second (ASR) server; the answer is that
	// transcript in Response.Text.
	KindSpeechASR RequestKind = "speech_asr"
	// KindImage posts Media's fields to an image route
	// (tt-media-server's /v1/images/generations, image-to-image, edits);
	// the answer is the first image's bytes in Response.Media.
	KindImage RequestKind = "image"
	// KindClassify posts an image to /v1/cnn/search-image; the answer is
	// the top-1 label in Response.Text.
	KindClassify RequestKind = "classify"
	// KindDetect posts an image to /v1/cnn/search-image and reads a
	// detector's boxes into Response.Boxes.
	KindDetect RequestKind = "detect"
	// KindVideo submits a video job (/v1/videos/generations), waits for it
	// and downloads the MP4 into Response.Media.
	KindVideo RequestKind = "video"
)

// MediaArgs are a media request's route and JSON fields. Images are sent
// base64 in the named fields; they stay out of the JSON form (sample
// files, cache keys), which carries their SHA-256 instead.
type MediaArgs struct {
	Path   string            `json:"path"`
	Fields map[string]any    `json:"fields,omitempty"`
	Images map[string][]byte `json:"-"`
	// ImageSHA256 names each image field's bytes.
	ImageSHA256 map[string]string `json:"image_sha256,omitempty"`
}

// NewMediaArgs returns MediaArgs with images and their digests.
func NewMediaArgs(path string, fields map[string]any, images map[string][]byte) *MediaArgs {
	m := &MediaArgs{Path: path, Fields: fields, Images: images}
	for k, b := range images {
		if m.ImageSHA256 == nil {
			m.ImageSHA256 = map[string]string{}
		}
		sum := sha256.Sum256(b)
		m.ImageSHA256[k] = hex.EncodeToString(sum[:])
	}
	return m
}

// Instance is one request of one document (lm-eval's Instance).
type Instance struct {
	Kind RequestKind `json:"kind"`
	// Index orders a document's requests (the choice index for
	// multiple_choice).
	Index int `json:"index"`
	// Context is the full prompt (few-shot examples included).
	Context string `json:"context"`
	// Continuation is scored after Context (loglikelihood only).
	Continuation string `json:"continuation,omitempty"`
	// Messages is the chat form of Context (chat endpoints only).
	Messages []Message `json:"messages,omitempty"`
	// Gen holds generation settings (generate only).
	Gen *GenKwargs `json:"gen_kwargs,omitempty"`
	// Audio is the clip of a transcription request. It stays out of the
	// JSON form (sample files, cache keys), which carries its SHA-256.
	Audio       []byte `json:"-"`
	AudioSHA256 string `json:"audio_sha256,omitempty"`
	// Inputs are the texts of an embeddings request.
	Inputs []string `json:"input,omitempty"`
	// Media is the route and fields of an image, CNN or video request.
	Media *MediaArgs `json:"media,omitempty"`
	// Measurement names the networks a task's Measure uses (weights and
	// their revisions); it is not sent, but keys the cache, so that a run
	// measured with other weights is not reused.
	Measurement string `json:"measurement,omitempty"`
}

// Response is the model's answer to one Instance.
type Response struct {
	// Text is the generated text (generate).
	Text string `json:"text,omitempty"`
	// LogLikelihood is the summed log-probability of the continuation and
	// IsGreedy whether every continuation token was the argmax
	// (loglikelihood).
	LogLikelihood float64 `json:"loglikelihood,omitempty"`
	IsGreedy      bool    `json:"is_greedy,omitempty"`
	// Embeddings are an embeddings request's vectors, one per input, or
	// what a task's Measure computed from Media.
	Embeddings [][]float64 `json:"embeddings,omitempty"`
	// Media is an image or video the server returned. It is measured
	// (Task.Measure) before the response is cached or scored, and never
	// stored: a run keeps the measurements.
	Media []byte `json:"-"`
	// Boxes are a detector's boxes: x1, y1, x2, y2, score, class.
	Boxes [][6]float64 `json:"boxes,omitempty"`
}

// MetricSpec names a metric, how it aggregates and which way is better.
type MetricSpec struct {
	Name           string `json:"metric"`
	Aggregation    string `json:"aggregation"`
	HigherIsBetter bool   `json:"higher_is_better"`
	// ExactMatch configures exact_match (nil for other metrics).
	ExactMatch *metric.ExactMatchOptions `json:"exact_match,omitempty"`
	// Corpus, when set, aggregates the documents' values together (each
	// document's values as one slice) instead of taking their mean: a
	// corpus-level WER or a rank correlation. Such a metric has no
	// standard error.
	Corpus func(perDoc [][]float64) float64 `json:"-"`
	// Vector says a document's values are one long vector that only the
	// corpus metric reads (FID's 2048 Inception features): sample files
	// record its length, not its values.
	Vector bool `json:"-"`
}

// Scores maps a metric name to its per-sample values: one value for most
// metrics, one per instruction for IFEval's instruction-level accuracies
// (their mean is taken over the flattened values, as lm-eval does).
type Scores map[string][]float64

// Task is one evaluation task.
type Task struct {
	Name    string
	Version string
	Output  OutputType
	// Description is prepended to every prompt (MMLU's subject line).
	Description string
	// Docs are the documents evaluated; FewShot the pool examples come from.
	Docs       []Doc
	FewShot    []Doc
	NumFewShot int
	// TargetDelimiter joins context and answer (" "); FewshotDelimiter
	// joins examples ("\n\n").
	TargetDelimiter  string
	FewshotDelimiter string
	DocToText        func(Doc) (string, error)
	// DocToTarget is the reference answer of a generate_until document and
	// the answer shown in few-shot examples.
	DocToTarget func(Doc) (string, error)
	// DocToChoices and DocToGold define a multiple_choice document.
	DocToChoices func(Doc) ([]string, error)
	DocToGold    func(Doc) (int, error)
	Gen          GenKwargs
	// GenFor, when set, gives each document its own generation settings
	// (a group whose subtasks differ, as LongBench's); Gen stays the
	// default for callers that override the budget.
	GenFor  func(Doc) (GenKwargs, error)
	Filters []filter.Chain
	Metrics []MetricSpec
	// Process scores a generate_until document itself instead of
	// filters+exact_match (lm-eval's process_results, used by IFEval).
	Process func(doc Doc, response string) (Scores, error)
	// ProcessFilter names the result keys' filter half for a Process task
	// whose definition scores through a custom filter ("extract_code");
	// empty means "none".
	ProcessFilter string
	// DocToImages gives a document's images as data URLs (lmms-eval's
	// doc_to_visual); they go with the last user message, so the task
	// needs a chat endpoint (ChatOnly).
	DocToImages func(Doc) ([]string, error)
	// DocToParts, when set, gives the last user message's content parts
	// in order (lmms-eval's doc_to_messages, images interleaved with the
	// text); the task needs a chat endpoint (ChatOnly).
	DocToParts func(Doc) ([]ContentPart, error)
	// ChatOnly says the task cannot be sent to a completions endpoint.
	ChatOnly bool
	// MediaRequests builds a media task's requests and ProcessMedia
	// scores their answers (Output Media).
	MediaRequests func(Doc) ([]Instance, error)
	ProcessMedia  func(doc Doc, resps []Response) (Scores, error)
	// Measure, when set, turns a media answer (Response.Media: an image,
	// a video) into numbers before the response is cached and scored
	// (CLIP embeddings, Inception features); the media bytes are then
	// dropped.
	Measure func(ctx context.Context, inst Instance, resp *Response) error
	// ErroredScores, when set, is the score of a document whose request
	// failed, under the errors-as-wrong policy, for metrics where 0 is
	// not the worst value (WER counts every reference word as an error).
	ErroredScores func(Doc) (Scores, error)
	// GenPrefix, when set, starts the answer (lm-eval's gen_prefix): the
	// prompt ends with TargetDelimiter and the prefix, few-shot answers
	// are preceded by the prefix and a space, and chat requests end with
	// an assistant turn holding it.
	GenPrefix func(Doc) (string, error)
	// Config is echoed into the results file's configs entry.
	Config map[string]any
	// DescriptionFor, when set, gives each document its own description
	// (MMLU's per-subject line) instead of Description.
	DescriptionFor func(Doc) string
	// SubtaskOf, when set, names each document's subtask; results then
	// carry one entry per subtask plus this task as a group whose value is
	// the size-weighted mean of its subtasks (lm-eval's weight_by_size).
	SubtaskOf func(Doc) string
	// GroupUnweighted makes the group's value the plain mean of its
	// subtasks' values (lm-eval's weight_by_size: false) instead of the
	// size-weighted mean.
	GroupUnweighted bool

	// matchers caches compiled exact_match options (shared by copies of
	// the task, keyed by the options themselves).
	matchers *matcherCache
}

type matcherCache struct {
	mu sync.Mutex
	m  map[string]*metric.ExactMatcher
}

// exactMatcher compiles opts once per task.
func (t *Task) exactMatcher(opts metric.ExactMatchOptions) (*metric.ExactMatcher, error) {
	key := fmt.Sprintf("%q|%v|%v|%v", opts.RegexesToIgnore, opts.IgnoreCase, opts.IgnorePunctuation, opts.IgnoreNumbers)
	c := t.matchers
	if c == nil {
		// A task used without Validate compiles every time.
		return metric.NewExactMatcher(opts)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.m[key]; ok {
		return m, nil
	}
	m, err := metric.NewExactMatcher(opts)
	if err != nil {
		return nil, err
	}
	c.m[key] = m
	return m, nil
}

// Validate checks that the task is complete.
func (t *Task) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("task has no name")
	}
	if t.DocToText == nil && t.Output != Media {
		return fmt.Errorf("task %s: no doc_to_text", t.Name)
	}
	switch t.Output {
	case Media:
		if t.MediaRequests == nil || t.ProcessMedia == nil {
			return fmt.Errorf("task %s: a media task needs its requests and their scoring", t.Name)
		}
	case GenerateUntil:
		if t.Process == nil && (t.DocToTarget == nil || len(t.Filters) == 0) {
			return fmt.Errorf("task %s: generate_until needs doc_to_target and filters, or process_results", t.Name)
		}
	case MultipleChoice:
		if t.DocToChoices == nil || t.DocToGold == nil {
			return fmt.Errorf("task %s: multiple_choice needs doc_to_choice and doc_to_target", t.Name)
		}
	default:
		return fmt.Errorf("task %s: unknown output_type %q", t.Name, t.Output)
	}
	if len(t.Metrics) == 0 {
		return fmt.Errorf("task %s: no metrics", t.Name)
	}
	if t.NumFewShot > len(t.FewShot) {
		return fmt.Errorf("task %s: %d-shot needs %d few-shot examples, have %d", t.Name, t.NumFewShot, t.NumFewShot, len(t.FewShot))
	}
	if t.matchers == nil {
		t.matchers = &matcherCache{m: map[string]*metric.ExactMatcher{}}
	}
	for _, m := range t.Metrics {
		if m.ExactMatch != nil {
			if _, err := t.exactMatcher(*m.ExactMatch); err != nil {
				return fmt.Errorf("task %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// fewShotTarget is the answer shown after an example's question.
func (t *Task) fewShotTarget(d Doc) (string, error) {
	if t.Output == MultipleChoice {
		choices, err := t.DocToChoices(d)
		if err != nil {
			return "", err
		}
		gold, err := t.DocToGold(d)
		if err != nil {
			return "", err
		}
		if gold < 0 || gold >= len(choices) {
			return "", fmt.Errorf("%s: gold index %d out of range for %d choices", d.Source, gold, len(choices))
		}
		return choices[gold], nil
	}
	if t.DocToTarget == nil {
		return "", fmt.Errorf("task %s: few-shot examples need doc_to_target", t.Name)
	}
	return t.DocToTarget(d)
}

// examples picks the few-shot examples of doc: the first NumFewShot of the
// pool, skipping doc itself when the pool is the evaluated split.
func (t *Task) examples(doc Doc) []Doc {
	out := make([]Doc, 0, t.NumFewShot)
	for _, e := range t.FewShot {
		if len(out) == t.NumFewShot {
			break
		}
		if e.Source == doc.Source && e.Source != "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Context builds the prompt of doc: description, examples joined by
// FewshotDelimiter, then the question. For chat it also returns the
// multi-turn form (lm-eval's fewshot_as_multiturn).
func (t *Task) Context(doc Doc) (string, []Message, error) {
	q, err := t.DocToText(doc)
	if err != nil {
		return "", nil, err
	}
	desc := t.Description
	if t.DescriptionFor != nil {
		desc = t.DescriptionFor(doc)
	}
	var b strings.Builder
	b.WriteString(desc)
	var msgs []Message
	pendingDesc := desc
	for _, e := range t.examples(doc) {
		eq, err := t.DocToText(e)
		if err != nil {
			return "", nil, fmt.Errorf("few-shot example: %w", err)
		}
		ea, err := t.fewShotTarget(e)
		if err != nil {
			return "", nil, fmt.Errorf("few-shot example: %w", err)
		}
		if t.GenPrefix != nil {
			p, err := t.GenPrefix(e)
			if err != nil {
				return "", nil, fmt.Errorf("few-shot example: %w", err)
			}
			ea = p + " " + ea
		}
		b.WriteString(eq + t.TargetDelimiter + ea + t.FewshotDelimiter)
		msgs = append(msgs, Message{Role: "user", Content: pendingDesc + eq}, Message{Role: "assistant", Content: ea})
		pendingDesc = ""
	}
	b.WriteString(q)
	last := Message{Role: "user", Content: pendingDesc + q}
	if t.DocToImages != nil {
		if last.Images, err = t.DocToImages(doc); err != nil {
			return "", nil, err
		}
	}
	if t.DocToParts != nil {
		if last.Parts, err = t.DocToParts(doc); err != nil {
			return "", nil, err
		}
		var text strings.Builder
		for _, p := range last.Parts {
			text.WriteString(p.Text)
		}
		last.Content = text.String()
	}
	msgs = append(msgs, last)
	if t.GenPrefix != nil {
		p, err := t.GenPrefix(doc)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(t.TargetDelimiter + p)
		msgs = append(msgs, Message{Role: "assistant", Content: p})
	}
	return b.String(), msgs, nil
}

// Requests builds doc's requests.
func (t *Task) Requests(doc Doc) ([]Instance, error) {
	if t.Output == Media {
		return t.MediaRequests(doc)
	}
	ctx, msgs, err := t.Context(doc)
	if err != nil {
		return nil, err
	}
	switch t.Output {
	case GenerateUntil:
		g := t.Gen
		if t.GenFor != nil {
			if g, err = t.GenFor(doc); err != nil {
				return nil, err
			}
		}
		return []Instance{{Kind: KindGenerate, Context: ctx, Messages: msgs, Gen: &g}}, nil
	case MultipleChoice:
		choices, err := t.DocToChoices(doc)
		if err != nil {
			return nil, err
		}
		if len(choices) == 0 {
			return nil, fmt.Errorf("%s: no choices", doc.Source)
		}
		out := make([]Instance, len(choices))
		for i, c := range choices {
			out[i] = Instance{Kind: KindLoglikelihood, Index: i, Context: ctx, Continuation: t.TargetDelimiter + c}
		}
		return out, nil
	}
	return nil, fmt.Errorf("task %s: unknown output_type %q", t.Name, t.Output)
}

// Target is the reference recorded with a sample: the answer text for
// generate_until, the gold index for multiple_choice.
func (t *Task) Target(doc Doc) (any, error) {
	switch {
	case t.Output == MultipleChoice:
		return t.DocToGold(doc)
	case t.DocToTarget != nil:
		return t.DocToTarget(doc)
	default:
		return "", nil
	}
}

// FilterNames lists the result keys' filter halves, in order.
func (t *Task) FilterNames() []string {
	if t.Output == MultipleChoice || t.Output == Media {
		return []string{"none"}
	}
	if t.Process != nil {
		return []string{t.processFilter()}
	}
	out := make([]string, len(t.Filters))
	for i, f := range t.Filters {
		out[i] = f.Name
	}
	return out
}

func (t *Task) processFilter() string {
	if t.ProcessFilter != "" {
		return t.ProcessFilter
	}
	return "none"
}

// Scored is one document's outcome under one filter.
type Scored struct {
	Filter   string
	Filtered any
	Scores   Scores
}

// Score scores doc's responses (one per request, in request order).
func (t *Task) Score(doc Doc, resps []Response) ([]Scored, error) {
	switch t.Output {
	case Media:
		s, err := t.ProcessMedia(doc, resps)
		if err != nil {
			return nil, err
		}
		var filtered any
		if len(resps) == 1 && resps[0].Text != "" {
			filtered = resps[0].Text
		}
		return []Scored{{Filter: "none", Filtered: filtered, Scores: s}}, nil
	case MultipleChoice:
		return t.scoreChoice(doc, resps)
	case GenerateUntil:
		if len(resps) != 1 {
			return nil, fmt.Errorf("%s: %d responses for one generate request", doc.Source, len(resps))
		}
		if t.Process != nil {
			s, err := t.Process(doc, resps[0].Text)
			if err != nil {
				return nil, err
			}
			return []Scored{{Filter: t.processFilter(), Filtered: resps[0].Text, Scores: s}}, nil
		}
		target, err := t.DocToTarget(doc)
		if err != nil {
			return nil, err
		}
		// A generated answer may name its choice by text rather than by
		// letter; filters like multi_choice_regex read the choices.
		var choices []string
		if t.DocToChoices != nil {
			if choices, err = t.DocToChoices(doc); err != nil {
				return nil, err
			}
		}
		out := make([]Scored, 0, len(t.Filters))
		for _, f := range t.Filters {
			got, err := f.ApplyChoices([]string{resps[0].Text}, choices)
			if err != nil {
				return nil, err
			}
			sc := Scores{}
			for _, m := range t.Metrics {
				if m.ExactMatch == nil {
					return nil, fmt.Errorf("task %s: metric %s is not supported for generate_until", t.Name, m.Name)
				}
				em, err := t.exactMatcher(*m.ExactMatch)
				if err != nil {
					return nil, err
				}
				v, err := em.Score(got, target)
				if err != nil {
					return nil, err
				}
				sc[m.Name] = []float64{v}
			}
			out = append(out, Scored{Filter: f.Name, Filtered: got, Scores: sc})
		}
		return out, nil
	}
	return nil, fmt.Errorf("task %s: unknown output_type %q", t.Name, t.Output)
}

func (t *Task) scoreChoice(doc Doc, resps []Response) ([]Scored, error) {
	choices, err := t.DocToChoices(doc)
	if err != nil {
		return nil, err
	}
	gold, err := t.DocToGold(doc)
	if err != nil {
		return nil, err
	}
	lls := make([]float64, len(resps))
	filtered := make([][2]any, len(resps))
	for i, r := range resps {
		lls[i] = r.LogLikelihood
		filtered[i] = [2]any{r.LogLikelihood, r.IsGreedy}
	}
	acc, accNorm, err := metric.MultipleChoice(lls, choices, gold)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doc.Source, err)
	}
	sc := Scores{}
	for _, m := range t.Metrics {
		switch m.Name {
		case "acc":
			sc["acc"] = []float64{acc}
		case "acc_norm":
			sc["acc_norm"] = []float64{accNorm}
		default:
			return nil, fmt.Errorf("task %s: metric %s is not supported for multiple_choice", t.Name, m.Name)
		}
	}
	return []Scored{{Filter: "none", Filtered: filtered, Scores: sc}}, nil
}

// Aggregate is one (metric, filter) result.
type Aggregate struct {
	Metric string
	Filter string
	Value  float64
	Stderr float64
	// N is the number of values aggregated (instructions for inst-level
	// metrics, documents otherwise).
	N int
}

// Key is lm-eval's result key "metric,filter".
func (a Aggregate) Key() string { return a.Metric + "," + a.Filter }

// AggregateScores means every (metric, filter)'s flattened values. Metrics
// aggregated by "mean" get the sample standard error of the mean; others
// (IFEval's agg_inst_level_acc) get NaN, written "N/A", as lm-eval gives no
// standard error for custom aggregations. perFilter maps a filter name to
// the documents' Scores.
func AggregateScores(metrics []MetricSpec, filters []string, perFilter map[string][]Scores) []Aggregate {
	agg := map[string]string{}
	corpus := map[string]func([][]float64) float64{}
	for _, m := range metrics {
		agg[m.Name] = m.Aggregation
		if m.Corpus != nil {
			corpus[m.Name] = m.Corpus
		}
	}
	var out []Aggregate
	for _, f := range filters {
		names := map[string]bool{}
		for _, s := range perFilter[f] {
			for k := range s {
				names[k] = true
			}
		}
		ordered := make([]string, 0, len(names))
		for _, m := range metrics {
			if names[m.Name] {
				ordered = append(ordered, m.Name)
				delete(names, m.Name)
			}
		}
		var rest []string
		for k := range names {
			rest = append(rest, k)
		}
		sort.Strings(rest)
		ordered = append(ordered, rest...)
		for _, m := range ordered {
			if fn := corpus[m]; fn != nil {
				var perDoc [][]float64
				for _, s := range perFilter[f] {
					if v, ok := s[m]; ok {
						perDoc = append(perDoc, v)
					}
				}
				out = append(out, Aggregate{Metric: m, Filter: f, Value: fn(perDoc), Stderr: math.NaN(), N: len(perDoc)})
				continue
			}
			var vals []float64
			for _, s := range perFilter[f] {
				vals = append(vals, s[m]...)
			}
			se := math.NaN()
			if agg[m] == "" || agg[m] == "mean" {
				se = metric.MeanStderr(vals)
			}
			out = append(out, Aggregate{Metric: m, Filter: f, Value: metric.Mean(vals), Stderr: se, N: len(vals)})
		}
	}
	return out
}
