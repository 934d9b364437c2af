// Package runner evaluates a task against a backend: it builds each
// document's requests, sends them with bounded concurrency, serves repeats
// from an on-disk cache (so an interrupted run resumes), scores the
// responses, and aggregates the metrics with standard errors. Failures are
// kept per sample with their kind; the error policy decides whether errored
// samples count as wrong (the default) or leave the denominator, and the
// result always says how many there were.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/metric"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/limit"
)

// Backend answers requests; *backend.Backend is one.
type Backend interface {
	Do(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error)
	Model() string
	API() openai.API
}

// ErrorPolicy says how errored samples are scored.
type ErrorPolicy string

// The policies.
const (
	// ErrorsAsWrong scores an errored sample 0 on every metric and keeps
	// it in the denominator.
	ErrorsAsWrong ErrorPolicy = "wrong"
	// ErrorsExcluded leaves errored samples out of the denominator.
	ErrorsExcluded ErrorPolicy = "exclude"
)

// Options configure a run.
type Options struct {
	// Concurrency is the number of documents in flight (at least 1).
	Concurrency int
	// Limit caps the documents evaluated (the zero value: all of them).
	Limit limit.Docs
	// Cache, when set, makes the run resumable.
	Cache *Cache
	// ErrorPolicy defaults to ErrorsAsWrong.
	ErrorPolicy ErrorPolicy
	// Progress, when set, is told the task's document count and each
	// finished document (a progress display).
	Progress Progress
	// ThinkEndToken, when set, removes a reasoning model's thinking from
	// generated text before scoring: everything up to and including the
	// last occurrence of the token (lm-eval's think_end_token). The raw
	// text stays in the samples.
	ThinkEndToken string
}

// Progress follows a run: Step announces a task and its documents, Done
// counts finished ones.
type Progress interface {
	Step(name string, total int)
	Done(n int)
}

// SampleError is why a sample could not be scored.
type SampleError struct {
	// Kind is "bad_doc", "scoring", or a openai.ErrorKind.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Sample is one evaluated document.
type Sample struct {
	DocID     int
	Source    string
	Doc       map[string]any
	DocHash   string
	Target    any
	Subtask   string
	Requests  []evalsuite.Instance
	Responses []evalsuite.Response
	Raw       []json.RawMessage
	Scored    []evalsuite.Scored
	Err       *SampleError
	// FromCache counts requests answered by the cache.
	FromCache int
}

// ErrorSummary counts errored samples.
type ErrorSummary struct {
	Errored int            `json:"errored"`
	ByKind  map[string]int `json:"by_kind,omitempty"`
	// Policy is how they were scored ("wrong" or "exclude").
	Policy ErrorPolicy `json:"counted_as"`
	// Examples holds the first few messages, for the summary.
	Examples []string `json:"examples,omitempty"`
}

// Subtask is one member of a grouped task.
type Subtask struct {
	Name       string
	Size       int
	Aggregates []evalsuite.Aggregate
}

// Result is a finished task.
type Result struct {
	Task       *evalsuite.Task
	Samples    []Sample
	NOriginal  int
	NEffective int
	// Aggregates are the task's results; for a grouped task they are the
	// size-weighted group means with pooled standard errors.
	Aggregates []evalsuite.Aggregate
	Subtasks   []Subtask
	Errors     ErrorSummary
	// FromCache counts requests answered by the cache.
	FromCache int
	Requests  int
}

// Run evaluates task. On cancellation it returns the context's error; the
// requests completed so far are in the cache.
func Run(ctx context.Context, task *evalsuite.Task, be Backend, opts Options) (*Result, error) {
	if err := task.Validate(); err != nil {
		return nil, err
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.ErrorPolicy == "" {
		opts.ErrorPolicy = ErrorsAsWrong
	}
	if opts.ErrorPolicy != ErrorsAsWrong && opts.ErrorPolicy != ErrorsExcluded {
		return nil, fmt.Errorf("error policy %q: want wrong or exclude", opts.ErrorPolicy)
	}
	if task.Output == evalsuite.MultipleChoice && be.API() == openai.Chat {
		return nil, fmt.Errorf("task %s scores choices by log-likelihood, which chat endpoints cannot give; use the completions API or the task's _generative variant", task.Name)
	}
	if task.ChatOnly && be.API() != openai.Chat {
		return nil, fmt.Errorf("task %s sends images in chat messages: use the chat API", task.Name)
	}
	n := opts.Limit.Apply(len(task.Docs))
	res := &Result{Task: task, NOriginal: len(task.Docs), NEffective: n, Samples: make([]Sample, n)}
	if opts.Progress != nil {
		opts.Progress.Step(task.Name, n)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(opts.Concurrency, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res.Samples[i] = runDoc(ctx, task, be, opts, task.Docs[i])
				if opts.Progress != nil {
					opts.Progress.Done(1)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("task %s interrupted (completed requests are cached; run again to resume): %w", task.Name, err)
	}
	aggregate(res, opts.ErrorPolicy)
	return res, nil
}

// hashJSON is lm-eval's doc_hash idea: sha256 of the canonical JSON.
func hashJSON(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func runDoc(ctx context.Context, task *evalsuite.Task, be Backend, opts Options, doc evalsuite.Doc) Sample {
	cache := opts.Cache
	s := Sample{DocID: doc.ID, Source: doc.Source, Doc: doc.Fields, DocHash: hashJSON(doc.Fields)}
	if task.SubtaskOf != nil {
		s.Subtask = task.SubtaskOf(doc)
	}
	if doc.Invalid != nil {
		s.Err = &SampleError{Kind: "bad_doc", Message: doc.Invalid.Error()}
		return s
	}
	target, err := task.Target(doc)
	if err != nil {
		s.Err = &SampleError{Kind: "bad_doc", Message: err.Error()}
		return s
	}
	s.Target = target
	reqs, err := task.Requests(doc)
	if err != nil {
		s.Err = &SampleError{Kind: "bad_doc", Message: err.Error()}
		return s
	}
	s.Requests = reqs
	s.Responses = make([]evalsuite.Response, len(reqs))
	s.Raw = make([]json.RawMessage, len(reqs))
	for i, r := range reqs {
		key := Key(task.Name+"@"+task.Version, s.DocHash, be.Model(), string(be.API()), r)
		if cache != nil {
			if resp, raw, ok := cache.Get(key); ok {
				s.Responses[i], s.Raw[i] = resp, raw
				s.FromCache++
				continue
			}
		}
		resp, raw, err := be.Do(ctx, r)
		s.Raw[i] = raw
		if err != nil {
			kind := "request"
			var ce *openai.Error
			if errors.As(err, &ce) {
				kind = string(ce.Kind)
			}
			if ctx.Err() != nil {
				kind = "interrupted"
			}
			s.Err = &SampleError{Kind: kind, Message: fmt.Sprintf("request %d: %v", i, err)}
			return s
		}
		if task.Measure != nil {
			// Measured before it is cached: a resumed run reads the
			// numbers, never the media.
			if err := task.Measure(ctx, r, &resp); err != nil {
				kind := "measure"
				if ctx.Err() != nil {
					kind = "interrupted"
				}
				s.Err = &SampleError{Kind: kind, Message: fmt.Sprintf("request %d: %v", i, err)}
				return s
			}
		}
		resp.Media = nil
		s.Responses[i] = resp
		if cache != nil {
			if err := cache.Put(key, resp, raw); err != nil {
				s.Err = &SampleError{Kind: "cache", Message: err.Error()}
				return s
			}
		}
	}
	toScore := s.Responses
	if opts.ThinkEndToken != "" {
		toScore = make([]evalsuite.Response, len(s.Responses))
		for i, r := range s.Responses {
			if j := strings.LastIndex(r.Text, opts.ThinkEndToken); j >= 0 {
				r.Text = r.Text[j+len(opts.ThinkEndToken):]
			}
			toScore[i] = r
		}
	}
	scored, err := task.Score(doc, toScore)
	if err != nil {
		s.Err = &SampleError{Kind: "scoring", Message: err.Error()}
		return s
	}
	s.Scored = scored
	return s
}

// zeroScores is an errored sample's score under ErrorsAsWrong: 0 on every
// metric of every filter.
func zeroScores(task *evalsuite.Task) evalsuite.Scores {
	sc := evalsuite.Scores{}
	for _, m := range task.Metrics {
		sc[m.Name] = []float64{0}
	}
	return sc
}

func aggregate(res *Result, policy ErrorPolicy) {
	task := res.Task
	filters := task.FilterNames()
	res.Errors = ErrorSummary{Policy: policy, ByKind: map[string]int{}}
	perFilter := map[string][]evalsuite.Scores{}
	perSub := map[string]map[string][]evalsuite.Scores{}
	subSize := map[string]int{}
	for i := range res.Samples {
		s := &res.Samples[i]
		res.Requests += len(s.Requests)
		res.FromCache += s.FromCache
		var byFilter map[string]evalsuite.Scores
		if s.Err != nil {
			res.Errors.Errored++
			res.Errors.ByKind[s.Err.Kind]++
			if len(res.Errors.Examples) < 5 {
				res.Errors.Examples = append(res.Errors.Examples, fmt.Sprintf("doc %d (%s): %s", s.DocID, s.Err.Kind, s.Err.Message))
			}
			if policy == ErrorsExcluded {
				continue
			}
			wrong := zeroScores(task)
			if task.ErroredScores != nil {
				sc, err := task.ErroredScores(evalsuite.Doc{ID: s.DocID, Source: s.Source, Fields: s.Doc})
				if err != nil {
					// A document too broken to score even as wrong
					// cannot enter a corpus metric; it stays counted
					// among the errors.
					continue
				}
				wrong = sc
			}
			byFilter = map[string]evalsuite.Scores{}
			for _, f := range filters {
				byFilter[f] = wrong
			}
		} else {
			byFilter = map[string]evalsuite.Scores{}
			for _, sc := range s.Scored {
				byFilter[sc.Filter] = sc.Scores
			}
		}
		for _, f := range filters {
			perFilter[f] = append(perFilter[f], byFilter[f])
			if task.SubtaskOf != nil {
				if perSub[s.Subtask] == nil {
					perSub[s.Subtask] = map[string][]evalsuite.Scores{}
				}
				perSub[s.Subtask][f] = append(perSub[s.Subtask][f], byFilter[f])
			}
		}
		if task.SubtaskOf != nil {
			subSize[s.Subtask]++
		}
	}
	if len(res.Errors.ByKind) == 0 {
		res.Errors.ByKind = nil
	}
	if task.SubtaskOf == nil {
		res.Aggregates = evalsuite.AggregateScores(task.Metrics, filters, perFilter)
		return
	}
	names := make([]string, 0, len(perSub))
	for k := range perSub {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		res.Subtasks = append(res.Subtasks, Subtask{Name: name, Size: subSize[name], Aggregates: evalsuite.AggregateScores(task.Metrics, filters, perSub[name])})
	}
	res.Aggregates = groupAggregates(res.Subtasks, !task.GroupUnweighted)
}

// groupAggregates combines subtasks as lm-eval does for a group: the
// size-weighted mean (weight_by_size) or the plain mean, and the pooled
// standard error.
func groupAggregates(subs []Subtask, weightBySize bool) []evalsuite.Aggregate {
	type key struct{ metric, filter string }
	var order []key
	parts := map[key][]metric.Subtask{}
	for _, s := range subs {
		for _, a := range s.Aggregates {
			k := key{a.Metric, a.Filter}
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			parts[k] = append(parts[k], metric.Subtask{Value: a.Value, Stderr: a.Stderr, Size: a.N})
		}
	}
	out := make([]evalsuite.Aggregate, 0, len(order))
	for _, k := range order {
		p := parts[k]
		n := 0
		for _, s := range p {
			n += s.Size
		}
		se := metric.PooledStderr(p)
		if math.IsNaN(se) && len(p) == 1 {
			se = p[0].Stderr
		}
		out = append(out, evalsuite.Aggregate{Metric: k.metric, Filter: k.filter, Value: metric.GroupMean(p, weightBySize), Stderr: se, N: n})
	}
	return out
}
