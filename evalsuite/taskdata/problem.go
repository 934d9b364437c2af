package taskdata

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/runtime/hub"
)

// Problem is why a task has no data to run on, in three parts, so that a
// run whose tasks fail for one reason says the reason once: Data is the
// task's own part (the splits it reads), Cause the reason it may share
// with other tasks (the run is offline and the cache lacks the files; the
// Hub could not be reached; a gated set), and Fix the command that fetches
// the task's data.
type Problem struct {
	Task string
	// Data names what the task reads ("openai/gsm8k (main, split test)").
	Data string
	// Cause is the reason, worded without the task's name.
	Cause string
	// Fix is the command that fetches the task's data.
	Fix string
	// Err is the error underneath.
	Err error
}

func (p *Problem) Error() string {
	return fmt.Sprintf("task %s: no data: %s: %s; fix: %s (or pass --dataset %s=PATH)", p.Task, p.Data, p.Cause, p.Fix, p.Task)
}

func (p *Problem) Unwrap() error { return p.Err }

// splitError is a pull of one split that failed.
type splitError struct {
	split Split
	err   error
}

func (e *splitError) Error() string {
	return fmt.Sprintf("%s split %s: %v", e.split.Repo, e.split.Split, e.err)
}

func (e *splitError) Unwrap() error { return e.err }

// Explain turns a failed pull of task's data (model as for Plan) into a
// Problem. The cause is taken from the Hub's error: an offline cache miss,
// an endpoint that cannot be reached (its address and the network error,
// never one request's URL, so that every task the outage stopped shares
// it), or the Hub's own answer.
func Explain(task, model string, err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	p = &Problem{Task: task, Data: Describe(task, model), Fix: PullCommandFor([]string{task}, model), Err: err}
	var se *splitError
	errors.As(err, &se)
	var miss *hub.MissingError
	var ue *url.Error
	var he *hub.Error
	switch {
	case errors.As(err, &miss):
		p.Cause = "the run is offline and the Hub cache lacks the data (pull it where the Hub can be reached)"
	case errors.As(err, &ue):
		p.Cause = "the Hub could not be reached: " + Unreachable(ue)
	case errors.As(err, &he):
		p.Cause = he.Error()
		if he.Hint != "" {
			// The hint names the repository: tasks of one gated set share it.
			p.Cause = fmt.Sprintf("%s answered %d", he.Repo, he.Status)
			if he.Code != "" {
				p.Cause += " (" + he.Code + ")"
			}
			p.Cause += ": " + he.Hint
		}
	case se != nil:
		p.Cause = se.err.Error()
	default:
		p.Cause = err.Error()
	}
	return p
}

// Unreachable says which endpoint could not be reached and why, from the
// failed request's error: "http://127.0.0.1:9 (dial tcp 127.0.0.1:9:
// connect: connection refused)".
func Unreachable(ue *url.Error) string {
	where := ue.URL
	if u, err := url.Parse(ue.URL); err == nil && u.Host != "" {
		where = u.Scheme + "://" + u.Host
	}
	return fmt.Sprintf("%s (%v)", where, ue.Err)
}

// Describe names the data task reads, for messages: its splits, by
// repository ("Xnhyacinth/LongBench (lcc_e, repobench-p_e; split test)").
func Describe(task, model string) string {
	splits, err := Plan(task, model)
	if err != nil || len(splits) == 0 {
		return "its dataset"
	}
	var repos []string
	by := map[string][]Split{}
	for _, s := range splits {
		if _, ok := by[s.Repo]; !ok {
			repos = append(repos, s.Repo)
		}
		by[s.Repo] = append(by[s.Repo], s)
	}
	parts := make([]string, len(repos))
	for i, r := range repos {
		parts[i] = describeRepo(r, by[r])
	}
	return strings.Join(parts, ", ")
}

// describeRepo names the splits of one repository.
func describeRepo(repo string, splits []Split) string {
	same := true
	var configs, each []string
	for _, s := range splits {
		same = same && s.Split == splits[0].Split
		if s.Config != "" {
			configs = append(configs, s.Config)
		}
		each = append(each, strings.TrimSpace(s.Config+" split "+s.Split))
	}
	if same {
		if len(configs) == 0 {
			return repo + " (split " + splits[0].Split + ")"
		}
		return repo + " (" + strings.Join(configs, ", ") + "; split " + splits[0].Split + ")"
	}
	return repo + " (" + strings.Join(each, ", ") + ")"
}

// PullCommandFor is the one command that fetches the data of every task
// named (model as for Plan: the catalog model's Hub repository, needed
// when a task reads Meta's per-model sets).
func PullCommandFor(tasks []string, model string) string {
	if model != "" {
		model = path.Base(model)
	}
	names := append([]string(nil), tasks...)
	sort.Strings(names)
	names = compactSorted(names)
	cmd := "ttisctl dataset pull " + strings.Join(names, " ")
	for _, t := range names {
		if strings.Contains(PullCommand(t, model), "--catalog-model") {
			return cmd + " --catalog-model " + model
		}
	}
	return cmd
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
