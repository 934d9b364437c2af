// Package taskdata fetches the Hugging Face datasets an eval task reads
// (the splits each task declares in tasks.Info.Data, after the definition
// it follows: lm-eval's dataset_path/dataset_name/split, llama-cookbook's
// meta_eval details sets) through the one Hub client, runtime/hub, and
// turns the local copies into the task's tasks.Source. Local files given by
// the user keep working in the same column layout: this package only fills
// in what the user did not give.
package taskdata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// Split is one Hub split of a task, with "{model}" filled in.
type Split struct {
	tasks.HubData
	// Revision is the revision asked for ("main" when the definition pins
	// none, as lm-eval loads the default branch).
	Revision string `json:"revision"`
}

// Plan returns the Hub splits of task. model is the catalog model's Hub
// repository ("meta-llama/Llama-3.1-8B-Instruct"); it is needed only by
// Meta's per-model evaluation sets ("{model}").
func Plan(task, model string) ([]Split, error) {
	info, ok := lookup(task)
	if !ok {
		return nil, fmt.Errorf("unknown task %q (ttisctl eval --list-tasks lists them)", task)
	}
	if info.NotRunnable != "" {
		return nil, fmt.Errorf("task %s cannot run in ttis: %s", task, info.NotRunnable)
	}
	if info.Builtin && len(info.Data) == 0 {
		return nil, nil
	}
	data := info.Data
	if len(info.Variants) > 0 {
		v, _, err := tasks.VariantOf(task, model)
		if err != nil {
			return nil, err
		}
		if len(v.Data) == 0 {
			return nil, fmt.Errorf("task %s (%s) reads no Hub dataset: %s", task, v.Name, tasks.AssetsHint(task, v))
		}
		data = v.Data
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("task %s declares no Hub dataset: pass its local file", task)
	}
	base := path.Base(model)
	var out []Split
	for _, d := range data {
		if strings.Contains(d.Repo+d.Config+d.Files, "{model}") {
			if model == "" {
				return nil, fmt.Errorf("task %s reads Meta's per-model evaluation set (%s): it needs the catalog model (a unit, or --catalog-model)", task, d.Repo)
			}
			d.Repo = strings.ReplaceAll(d.Repo, "{model}", base)
			d.Config = strings.ReplaceAll(d.Config, "{model}", base)
			d.Files = strings.ReplaceAll(d.Files, "{model}", base)
		}
		rev := d.Revision
		if rev == "" {
			rev = "main"
		}
		out = append(out, Split{HubData: d, Revision: rev})
	}
	return out, nil
}

func lookup(task string) (tasks.Info, bool) {
	for _, t := range tasks.List() {
		if t.Name == task {
			return t, true
		}
	}
	return tasks.Info{}, false
}

// Pulled is the local copy of one split.
type Pulled struct {
	Split
	Commit string `json:"commit"`
	// Path is the file of the split, or a folder holding its shards.
	Path  string          `json:"path"`
	Files []hub.LocalFile `json:"files"`
}

// Data is the local copy of a task's Hub data.
type Data struct {
	Task   string   `json:"task"`
	Splits []Pulled `json:"splits"`
}

// Pull fetches (or, offline, finds in the cache) every split of task. The
// error of a gated split says how to get access; offline, a *hub.MissingError
// names the missing files.
func Pull(ctx context.Context, c *hub.Client, task, model string) (*Data, error) {
	return PullPinned(ctx, c, task, model, nil)
}

// Pins map a repository's revision ("REPO@REVISION") to the commit a run
// read, so that a resumed run reads the same data even when the branch
// has moved since.
type Pins map[string]string

// PinsOf are the commits the data of a run came from.
func PinsOf(data []*Data) Pins {
	pins := Pins{}
	for _, d := range data {
		for _, s := range d.Splits {
			if hub.IsCommit(s.Commit) {
				pins[s.Repo+"@"+s.Revision] = s.Commit
			}
		}
	}
	return pins
}

// PullPinned is Pull reading each split at its pinned commit, when pins
// has one.
func PullPinned(ctx context.Context, c *hub.Client, task, model string, pins Pins) (*Data, error) {
	splits, err := Plan(task, model)
	if err != nil {
		return nil, err
	}
	out := &Data{Task: task}
	for _, s := range splits {
		repo := hub.Repo{Type: hub.Dataset, ID: s.Repo}
		rev := s.Revision
		if commit, ok := pins[s.Repo+"@"+s.Revision]; ok {
			rev = commit
		}
		snap, err := c.Pull(ctx, repo, hub.PullOptions{Revision: rev, Include: []string{s.Files}})
		if err != nil {
			return nil, fmt.Errorf("task %s, %w", task, &splitError{split: s, err: err})
		}
		p := Pulled{Split: s, Commit: snap.Commit, Files: snap.Files}
		if p.Path, err = splitPath(c, repo, snap, s); err != nil {
			return nil, err
		}
		out.Splits = append(out.Splits, p)
	}
	return out, nil
}

// splitPath is what a task reads for a split: its file, or a folder of
// links to its shards (the snapshot folder holds other splits' files too).
func splitPath(c *hub.Client, repo hub.Repo, snap *hub.Snapshot, s Split) (string, error) {
	if len(snap.Files) == 1 {
		return snap.Files[0].Local, nil
	}
	dir := filepath.Join(c.CacheDir(), "splits", strings.ReplaceAll(repo.ID, "/", "--"), snap.Commit, safeName(s.Config+"."+s.Split+"."+s.Files))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("hub cache: %w", err)
	}
	for i, f := range snap.Files {
		// Shards keep their order (lexical, as datasets loads them) and
		// extension.
		name := fmt.Sprintf("%05d-%s", i, path.Base(f.Path))
		dst := filepath.Join(dir, name)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Symlink(f.Local, dst); err != nil {
			return "", fmt.Errorf("hub cache: %w", err)
		}
	}
	return dir, nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// Apply fills src with the pulled files of every role src does not name
// already (a local file the user gave wins).
func (d *Data) Apply(src *tasks.Source) {
	for _, p := range d.Splits {
		switch p.Role {
		case tasks.RoleTest:
			if src.Dataset == "" {
				src.Dataset = p.Path
			}
		case tasks.RoleFewShot:
			if src.FewShotDataset == "" {
				src.FewShotDataset = p.Path
			}
		default:
			if src.Files == nil {
				src.Files = map[string]string{}
			}
			if _, ok := src.Files[p.Role]; !ok {
				src.Files[p.Role] = p.Path
			}
		}
	}
}

// Pullable says whether task reads Hub data ttis can fetch (a known,
// runnable task with declared splits). A generated task may declare the
// Hub inputs of its generator (RULER's essays), other inputs staying the
// user's --dataset (Supplementary).
func Pullable(task string) bool {
	info, ok := lookup(task)
	if !ok || info.NotRunnable != "" {
		return false
	}
	for _, v := range info.Variants {
		if len(v.Data) > 0 {
			return true
		}
	}
	return len(info.Data) > 0
}

// PullableFor is Pullable for one catalog model (a Hub repository or model
// name): a task with variants reads Hub data for some models only.
func PullableFor(task, model string) bool {
	if !Pullable(task) {
		return false
	}
	v, has, err := tasks.VariantOf(task, model)
	if !has {
		return true
	}
	return err == nil && len(v.Data) > 0
}

// Supplementary says whether task's Hub data supplements its --dataset
// rather than replacing it: it declares no test split, so a local dataset
// given by the user does not make the pull unnecessary.
func Supplementary(task string) bool {
	info, ok := lookup(task)
	if !ok || len(info.Data) == 0 {
		return false
	}
	for _, d := range info.Data {
		if d.Role == tasks.RoleTest {
			return false
		}
	}
	return true
}

// PullCommand is the command that fetches task's data, for error messages.
func PullCommand(task, model string) string {
	cmd := "ttisctl dataset pull " + task
	if info, ok := lookup(task); ok && model != "" {
		for _, d := range info.Data {
			if strings.Contains(d.Repo, "{model}") {
				return cmd + " --catalog-model " + model
			}
		}
	}
	return cmd
}

// Gated lists the gated repositories among task's splits.
func Gated(task, model string) []string {
	splits, err := Plan(task, model)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range splits {
		if s.Gated && !seen[s.Repo] {
			seen[s.Repo] = true
			out = append(out, s.Repo)
		}
	}
	sort.Strings(out)
	return out
}

// IsMissing says whether err is an offline cache miss.
func IsMissing(err error) bool { return errors.Is(err, hub.ErrOffline) }
