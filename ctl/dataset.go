package ctl

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/units/catalog"
)

// datasetCommand groups the eval datasets' Hub workflows: pulling the
// splits a task reads into the Hub cache, listing what is cached, and
// verifying it.
func datasetCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag {
		return append(append(hubFlags(),
			&cli.StringFlag{Name: "state-dir", Usage: "state folder whose hub/ is the default cache (default: the daemon's, else ./ttis-state)"},
			&cli.StringFlag{Name: "catalog-model", Usage: "catalog model whose references to take, and whose Hub repository names Meta's per-model eval sets"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no running byte count"},
		), extra...)
	}
	return &cli.Command{
		Name:  "dataset",
		Usage: "pull, list and verify the Hugging Face datasets of the eval tasks",
		Description: `Each eval task declares the Hub dataset splits its definition loads
(repository, configuration, split, revision, files): see "ttisctl eval
--list-tasks -o json". "dataset pull" fetches them into the Hub cache
(STATE/hub, or ttisd.toml's hub_cache): every file is checked against the
Hub's sha256 (LFS) or git blob id, partial downloads resume, and the
resolved commit is recorded. "ttisctl eval", "release" and scheduled runs
pull what their tasks need the same way; with --offline (HF_HUB_OFFLINE=1)
they read only the cache and name what is missing.

Gated sets (GPQA, Meta's per-model evals) need a token: accept the terms on
the dataset's Hub page, save a token in a file of mode 0600 and pass
--hf-token-file. HF_ENDPOINT (or --hf-endpoint) points at a mirror.`,
		Subcommands: []*cli.Command{
			{
				Name:      "pull",
				Usage:     "fetch the Hub splits of tasks (default: the --catalog-model's references)",
				ArgsUsage: "[TASK...]",
				Flags:     flags(),
				Action:    runDatasetPull,
			},
			{
				Name:      "list",
				Usage:     "list the tasks' Hub splits and whether each is in the cache",
				ArgsUsage: "[TASK...]",
				Flags:     flags(),
				Action:    runDatasetList,
			},
			{
				Name:      "verify",
				Usage:     "re-hash the cached files of tasks (default: every split in the cache) against the Hub's checksums; a corrupt file is dropped, to be pulled again",
				ArgsUsage: "[TASK...]",
				Flags:     flags(),
				Action:    runDatasetVerify,
			},
		},
	}
}

// datasetTasks are the tasks a dataset command works on: the arguments,
// else the catalog model's runnable references, else every task with Hub
// data.
func datasetTasks(c *cli.Context) ([]string, string, error) {
	model := c.String("catalog-model")
	hfRepo := ""
	if model != "" {
		specs, err := catalog.ModelSpecs(model)
		if err != nil {
			return nil, "", usageError(c, "--catalog-model: %v", err)
		}
		hfRepo = specs[0].HFRepo
	}
	names := c.Args().Slice()
	if len(names) == 0 && model != "" {
		for _, r := range catalog.ModelEvalRefs(model) {
			if taskdata.Pullable(r.Task) {
				names = append(names, r.Task)
			}
		}
		if len(names) == 0 {
			return nil, "", failure(exitError, "no reference task of %s reads a Hub dataset ttis can pull", model)
		}
	}
	if len(names) == 0 {
		if c.Command.Name == "pull" {
			return nil, "", usageError(c, "name the tasks (ttisctl eval --list-tasks), or pass --catalog-model")
		}
		// Every task with Hub data; Meta's per-model sets only with
		// --catalog-model, which names the model.
		for _, t := range tasks.List() {
			if _, err := taskdata.Plan(t.Name, hfRepo); err == nil && taskdata.Pullable(t.Name) {
				names = append(names, t.Name)
			}
		}
	}
	for _, n := range names {
		if _, err := taskdata.Plan(n, hfRepo); err != nil {
			return nil, "", failure(exitError, "%v", err)
		}
	}
	return names, hfRepo, nil
}

// datasetCall is what every dataset subcommand starts from: the output
// form, the tasks and a Hub client.
type datasetCall struct {
	asJSON bool
	names  []string
	hfRepo string
	hc     *hub.Client
}

// startDataset reads a dataset subcommand's flags and arguments; an
// offline call's client asks the cache alone and never downloads.
func startDataset(c *cli.Context, offline bool) (*datasetCall, error) {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return nil, err
	}
	names, hfRepo, err := datasetTasks(c)
	if err != nil {
		return nil, err
	}
	state, err := hubStateDir(c)
	if err != nil {
		return nil, err
	}
	if offline {
		if err := c.Set("offline", "true"); err != nil {
			return nil, err
		}
	}
	hc, err := hubClient(c, state)
	if err != nil {
		return nil, err
	}
	return &datasetCall{asJSON: asJSON, names: names, hfRepo: hfRepo, hc: hc}, nil
}

func runDatasetPull(c *cli.Context) error {
	call, err := startDataset(c, false)
	if err != nil {
		return err
	}
	asJSON, names, hfRepo, hc := call.asJSON, call.names, call.hfRepo, call.hc
	var pulled []*taskdata.Data
	var failed []string
	for _, name := range names {
		data, err := taskdata.Pull(c.Context, hc, name, hfRepo)
		if err != nil {
			if c.Context.Err() != nil {
				return failure(exitInterrupted, "interrupted; partial files are kept and the next pull resumes them")
			}
			failed = append(failed, err.Error())
			continue
		}
		pulled = append(pulled, data)
	}
	if asJSON {
		if err := writeJSON(c.App.Writer, pulled); err != nil {
			return err
		}
	} else if len(pulled) > 0 {
		tw := tabwriter.NewWriter(safeWriter{c.App.Writer}, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tROLE\tREPOSITORY\tCONFIG\tSPLIT\tCOMMIT\tFILES\tPATH")
		for _, d := range pulled {
			for _, s := range d.Splits {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", safe(d.Task), safe(s.Role), safe(s.Repo), dash(safe(s.Config)), safe(s.HubData.Split), s.Commit[:12], len(s.Files), safe(s.Path))
			}
		}
		tw.Flush()
	}
	if len(failed) > 0 {
		return failure(exitError, "%s", strings.Join(failed, "\n"))
	}
	return nil
}

// datasetStatus is one split's state in the cache.
type datasetStatus struct {
	Task     string `json:"task"`
	Role     string `json:"role"`
	Repo     string `json:"repo"`
	Config   string `json:"config,omitempty"`
	Split    string `json:"split"`
	Revision string `json:"revision"`
	Files    string `json:"files"`
	Gated    bool   `json:"gated,omitempty"`
	// Cached is set when every file of the split is in the cache; Commit
	// is then the commit it came from, Missing otherwise what is not.
	Cached  bool     `json:"cached"`
	Commit  string   `json:"commit,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

func runDatasetList(c *cli.Context) error {
	call, err := startDataset(c, true) // listing never downloads
	if err != nil {
		return err
	}
	asJSON, names, hfRepo, hc := call.asJSON, call.names, call.hfRepo, call.hc
	var out []datasetStatus
	for _, name := range names {
		splits, err := taskdata.Plan(name, hfRepo)
		if err != nil {
			return failure(exitError, "%v", err)
		}
		for _, s := range splits {
			st := datasetStatus{Task: name, Role: s.Role, Repo: s.Repo, Config: s.Config, Split: s.HubData.Split, Revision: s.Revision, Files: s.Files, Gated: s.Gated}
			snap, err := hc.Pull(c.Context, hub.Repo{Type: hub.Dataset, ID: s.Repo}, hub.PullOptions{Revision: s.Revision, Include: []string{s.Files}})
			var me *hub.MissingError
			switch {
			case err == nil:
				st.Cached, st.Commit = true, snap.Commit
			case errors.As(err, &me):
				st.Missing = me.Missing
			default:
				st.Missing = []string{err.Error()}
			}
			out = append(out, st)
		}
	}
	if asJSON {
		return writeJSON(c.App.Writer, out)
	}
	fmt.Fprintf(safeWriter{c.App.Writer}, "Hub cache: %s\n", hc.CacheDir())
	tw := tabwriter.NewWriter(safeWriter{c.App.Writer}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tROLE\tREPOSITORY\tCONFIG\tSPLIT\tREVISION\tCACHED")
	for _, s := range out {
		cached := "yes (" + shortCommit(s.Commit) + ")"
		if !s.Cached {
			cached = "no"
		}
		repo := s.Repo
		if s.Gated {
			repo += " (gated)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safe(s.Task), safe(s.Role), safe(repo), dash(safe(s.Config)), safe(s.Split), safe(s.Revision), cached)
	}
	return tw.Flush()
}

func shortCommit(c string) string { return c[:min(12, len(c))] }

// verifyRow is one file's check.
type verifyRow struct {
	Task   string `json:"task"`
	Repo   string `json:"repo"`
	Commit string `json:"commit,omitempty"`
	hub.VerifyResult
}

func runDatasetVerify(c *cli.Context) error {
	call, err := startDataset(c, false)
	if err != nil {
		return err
	}
	asJSON, names, hfRepo, hc := call.asJSON, call.names, call.hfRepo, call.hc
	named := c.NArg() > 0 || c.String("catalog-model") != ""
	var rows []verifyRow
	bad := 0
	for _, name := range names {
		splits, err := taskdata.Plan(name, hfRepo)
		if err != nil {
			return failure(exitError, "%v", err)
		}
		for _, s := range splits {
			commit, res, err := hc.Verify(hub.Repo{Type: hub.Dataset, ID: s.Repo}, hub.PullOptions{Revision: s.Revision, Include: []string{s.Files}})
			if err != nil && !named && errors.Is(err, hub.ErrOffline) {
				continue // verifying everything: splits never pulled are not errors
			}
			if err != nil {
				rows = append(rows, verifyRow{Task: name, Repo: s.Repo, VerifyResult: hub.VerifyResult{Path: s.Files, Status: "missing", Detail: err.Error()}})
				bad++
				continue
			}
			for _, r := range res {
				if r.Status != "ok" {
					bad++
				}
				rows = append(rows, verifyRow{Task: name, Repo: s.Repo, Commit: commit, VerifyResult: r})
			}
		}
	}
	if asJSON {
		if err := writeJSON(c.App.Writer, rows); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(safeWriter{c.App.Writer}, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tREPOSITORY\tCOMMIT\tFILE\tSTATUS")
		for _, r := range rows {
			status := r.Status
			if r.Detail != "" {
				status += ": " + r.Detail
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safe(r.Task), safe(r.Repo), dash(shortCommit(r.Commit)), safe(r.Path), safe(status))
		}
		tw.Flush()
	}
	if bad > 0 {
		return failure(exitError, "%d file(s) missing or corrupt: run `ttisctl dataset pull %s` to fetch them again", bad, strings.Join(names, " "))
	}
	return nil
}
