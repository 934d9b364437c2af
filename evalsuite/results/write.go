// Package results writes evaluation results in lm-evaluation-harness's
// layout (results_<timestamp>.json with results[task]["metric,filter"] and
// "metric_stderr,filter", configs, versions, n-shot, n-samples; and
// samples_<task>_<timestamp>.jsonl with each document, its request, the
// raw response, the filtered answer and the scores), plus a markdown
// summary, and grades scores against the catalog's reference scores.
// Every file is written to a temporary name and renamed into place.
package results

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/runner"
)

// Run describes the whole evaluation for the results file.
type Run struct {
	Model   string
	BaseURL string
	API     string
	// Concurrency, Limit, LimitMode, Seed and MaxRetries are echoed in
	// "config".
	Concurrency int
	Limit       string
	LimitMode   string
	Seed        int
	MaxRetries  int
	Start, End  time.Time
	Tasks       []*runner.Result
	Grades      []Grade
	// Version is the ttis version.
	Version string
}

// Files are the paths written.
type Files struct {
	Results string
	Samples []string
	Summary string
}

// Timestamp formats t the way lm-eval names its files (ISO 8601 with ':'
// replaced by '-').
func Timestamp(t time.Time) string {
	return strings.ReplaceAll(t.UTC().Format("2006-01-02T15:04:05.000000"), ":", "-")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Sanitize is lm-eval's model_name_sanitized idea: path separators and
// other unsafe characters become "__".
func Sanitize(s string) string { return unsafeName.ReplaceAllString(s, "__") }

// num encodes a float for JSON: NaN (no value) as the given fallback.
func num(v float64, fallback any) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fallback
	}
	return v
}

func taskEntry(alias string, aggs []evalsuite.Aggregate, n int) map[string]any {
	e := map[string]any{"alias": alias, "name": strings.TrimPrefix(alias, " - "), "sample_len": n}
	for _, a := range aggs {
		e[a.Key()] = num(a.Value, nil)
		e[a.Metric+"_stderr,"+a.Filter] = num(a.Stderr, "N/A")
	}
	return e
}

// Build returns the results document.
func Build(r Run) map[string]any {
	res := map[string]any{}
	groups := map[string]any{}
	groupSubtasks := map[string]any{}
	configs := map[string]any{}
	versions := map[string]any{}
	nshot := map[string]any{}
	hib := map[string]any{}
	nsamples := map[string]any{}
	errs := map[string]any{}
	for _, t := range r.Tasks {
		name := t.Task.Name
		res[name] = taskEntry(name, t.Aggregates, t.NEffective)
		subs := []string{}
		for _, s := range t.Subtasks {
			res[s.Name] = taskEntry(" - "+s.Name, s.Aggregates, s.Size)
			subs = append(subs, s.Name)
			versions[s.Name] = t.Task.Version
			nshot[s.Name] = t.Task.NumFewShot
		}
		if len(t.Subtasks) > 0 {
			groups[name] = taskEntry(name, t.Aggregates, t.NEffective)
		}
		groupSubtasks[name] = subs
		cfg := map[string]any{}
		for k, v := range t.Task.Config {
			cfg[k] = v
		}
		configs[name] = cfg
		versions[name] = t.Task.Version
		nshot[name] = t.Task.NumFewShot
		h := map[string]any{}
		for _, m := range t.Task.Metrics {
			h[m.Name] = m.HigherIsBetter
		}
		hib[name] = h
		nsamples[name] = map[string]any{"original": t.NOriginal, "effective": t.NEffective}
		errs[name] = t.Errors
	}
	modelClass := "local-completions"
	if r.API == "chat" {
		modelClass = "local-chat-completions"
	}
	endpoint := r.BaseURL + "/v1/completions"
	if r.API == "chat" {
		endpoint = r.BaseURL + "/v1/chat/completions"
	}
	doc := map[string]any{
		"results":          res,
		"group_subtasks":   groupSubtasks,
		"configs":          configs,
		"versions":         versions,
		"n-shot":           nshot,
		"higher_is_better": hib,
		"n-samples":        nsamples,
		"config": map[string]any{
			"model":       modelClass,
			"model_args":  fmt.Sprintf("model=%s,base_url=%s,num_concurrent=%d,max_retries=%d", r.Model, endpoint, r.Concurrency, r.MaxRetries),
			"batch_size":  1,
			"limit":       r.Limit,
			"random_seed": r.Seed,
		},
		"date":                          float64(r.Start.UnixNano()) / 1e9,
		"model_name":                    r.Model,
		"model_name_sanitized":          Sanitize(r.Model),
		"start_time":                    r.Start.UTC().Format(time.RFC3339Nano),
		"end_time":                      r.End.UTC().Format(time.RFC3339Nano),
		"total_evaluation_time_seconds": fmt.Sprintf("%.3f", r.End.Sub(r.Start).Seconds()),
		"ttis": map[string]any{
			"version":    r.Version,
			"limit_mode": r.LimitMode,
			"errors":     errs,
			"grades":     r.Grades,
		},
	}
	if len(groups) > 0 {
		doc["groups"] = groups
	}
	return doc
}

// Write writes the results file, one samples file per task and the
// summary into dir (created when missing).
func Write(dir string, r Run) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("results dir: %w", err)
	}
	ts := Timestamp(r.Start)
	var files Files
	for _, t := range r.Tasks {
		p := filepath.Join(dir, fmt.Sprintf("samples_%s_%s.jsonl", t.Task.Name, ts))
		if err := writeAtomic(p, func(w *bufio.Writer) error { return writeSamples(w, t) }); err != nil {
			return files, err
		}
		files.Samples = append(files.Samples, p)
	}
	files.Results = filepath.Join(dir, fmt.Sprintf("results_%s.json", ts))
	b, err := json.MarshalIndent(Build(r), "", "  ")
	if err != nil {
		return files, fmt.Errorf("encode results: %w", err)
	}
	if err := writeAtomic(files.Results, func(w *bufio.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return files, err
	}
	files.Summary = filepath.Join(dir, fmt.Sprintf("summary_%s.md", ts))
	if err := writeAtomic(files.Summary, func(w *bufio.Writer) error { _, err := w.WriteString(Markdown(r)); return err }); err != nil {
		return files, err
	}
	return files, nil
}

func writeAtomic(path string, fill func(*bufio.Writer) error) error {
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(0o644))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Cleanup() // no-op after the replace
	w := bufio.NewWriter(f)
	if err := fill(w); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func sha(v any) string {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// arguments renders a sample's requests as lm-eval does
// ({"gen_args_0": {"arg_0": context, "arg_1": gen_kwargs}}).
func arguments(reqs []evalsuite.Instance) map[string]any {
	out := map[string]any{}
	for i, r := range reqs {
		a := map[string]any{"arg_0": r.Context}
		if r.Kind == evalsuite.KindLoglikelihood {
			a["arg_1"] = r.Continuation
		} else if r.Gen != nil {
			a["arg_1"] = r.Gen
		}
		if len(r.Messages) > 0 {
			a["messages"] = r.Messages
		}
		if r.AudioSHA256 != "" {
			a["audio_sha256"] = r.AudioSHA256
		}
		if len(r.Inputs) > 0 {
			a["input"] = r.Inputs
		}
		if r.Media != nil {
			a["media"] = r.Media
		}
		out[fmt.Sprintf("gen_args_%d", i)] = a
	}
	return out
}

func writeSamples(w *bufio.Writer, t *runner.Result) error {
	enc := json.NewEncoder(w)
	filters := t.Task.FilterNames()
	vector := map[string]bool{}
	for _, m := range t.Task.Metrics {
		vector[m.Name] = m.Vector
	}
	for _, s := range t.Samples {
		resps := make([]any, len(s.Responses))
		for i, r := range s.Responses {
			switch {
			case s.Requests[i].Kind == evalsuite.KindLoglikelihood:
				resps[i] = []any{[]any{r.LogLikelihood, r.IsGreedy}}
			case s.Requests[i].Kind == evalsuite.KindDetect:
				resps[i] = []any{map[string]any{"boxes": r.Boxes}}
			case s.Requests[i].Kind == evalsuite.KindEmbed || len(r.Embeddings) > 0:
				// The vectors would dwarf the file; their shape is kept.
				dims := make([]int, len(r.Embeddings))
				for j, v := range r.Embeddings {
					dims[j] = len(v)
				}
				resps[i] = []any{map[string]any{"embeddings": len(r.Embeddings), "dimensions": dims}}
			default:
				resps[i] = []any{r.Text}
			}
		}
		prompt := ""
		if len(s.Requests) > 0 {
			prompt = s.Requests[0].Context
		}
		byFilter := map[string]evalsuite.Scored{}
		for _, sc := range s.Scored {
			byFilter[sc.Filter] = sc
		}
		for _, f := range filters {
			line := map[string]any{
				"doc_id":        s.DocID,
				"doc":           lightDoc(s.Doc),
				"target":        s.Target,
				"arguments":     arguments(s.Requests),
				"resps":         resps,
				"filter":        f,
				"doc_hash":      s.DocHash,
				"prompt_hash":   sha(prompt),
				"target_hash":   sha(fmt.Sprint(s.Target)),
				"source":        s.Source,
				"raw_responses": s.Raw,
			}
			if s.Subtask != "" {
				line["subtask"] = s.Subtask
			}
			var names []string
			if s.Err != nil {
				line["error"] = s.Err
				line["filtered_resps"] = nil
				for _, m := range t.Task.Metrics {
					names = append(names, m.Name)
					if t.Errors.Policy == runner.ErrorsAsWrong {
						line[m.Name] = 0.0
					} else {
						line[m.Name] = nil
					}
				}
				line["counted_as"] = t.Errors.Policy
			} else {
				sc := byFilter[f]
				if t.Task.Output == evalsuite.MultipleChoice {
					// One [log-likelihood, is_greedy] pair per choice.
					line["filtered_resps"] = sc.Filtered
				} else {
					line["filtered_resps"] = []any{sc.Filtered}
				}
				for k, v := range sc.Scores {
					names = append(names, k)
					if vector[k] {
						// FID's features: their length, not 2048 numbers.
						line[k] = map[string]int{"vector_length": len(v)}
					} else if len(v) == 1 {
						line[k] = v[0]
					} else {
						line[k] = v
					}
				}
			}
			sort.Strings(names)
			line["metrics"] = names
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
	}
	return nil
}

// lightDoc is a document as a sample file shows it: a media field (Hugging
// Face's Image or Audio feature, {"bytes", "path"}) is replaced by its
// path, length and SHA-256, so clips do not fill the file.
func lightDoc(doc map[string]any) map[string]any {
	var out map[string]any
	for k, v := range doc {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		b, ok := m["bytes"].(string)
		if !ok || len(b) < 1024 {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(doc))
			for k2, v2 := range doc {
				out[k2] = v2
			}
		}
		sum := sha256.Sum256([]byte(b))
		out[k] = map[string]any{"path": m["path"], "bytes_len": len(b), "bytes_sha256": hex.EncodeToString(sum[:])}
	}
	if out == nil {
		return doc
	}
	return out
}
