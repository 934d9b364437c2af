package ctl

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/units/catalog"
)

func modelPullCommand() *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "download a catalog model's weights from its Hugging Face repository into the Hub cache",
		ArgsUsage: "MODEL",
		Description: `MODEL is a catalog model name (ttisctl catalog) or its Hugging Face
repository; the catalog gives the repository. The files go into the Hub
cache (STATE/hub, or ttisd.toml's hub_cache) at the resolved commit: every
file is checked against the Hub's sha256 (LFS) or git blob id, and an
interrupted pull resumes where it stopped. The last line printed (or "dir"
with -o json) is the snapshot folder: its files are hard links to the
cache's blobs, so it can be bind-mounted read-only into a container on its
own.

Like tt-inference-server's setup_host (workflows/setup_host.py: "hf download
REPO --exclude original/**", then a read-only mount of
models--ORG--NAME/snapshots/REV), Meta's consolidated checkpoints under
original/ are left out unless --with-original is given.

Gated weights (Llama) need a token: accept the licence on the model's Hub
page, save a token in a file of mode 0600 and pass --hf-token-file.
--include/--exclude take globs ("*.safetensors"; a folder name takes
everything under it).`,
		Flags: append(hubFlags(),
			&cli.StringFlag{Name: "state-dir", Usage: "state folder whose hub/ is the default cache (default: the daemon's, else ./ttis-state)"},
			&cli.StringFlag{Name: "revision", Value: "main", Usage: "branch, tag or commit"},
			&cli.StringSliceFlag{Name: "include", Usage: "only files matching this glob (repeatable)"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "leave out files matching this glob (repeatable)"},
			&cli.BoolFlag{Name: "with-original", Usage: "also pull original/ (Meta's consolidated checkpoints)"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no running byte count"},
		),
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			repo, err := modelRepo(args[0])
			if err != nil {
				return failure(exitError, "%v", err)
			}
			for _, p := range append(c.StringSlice("include"), c.StringSlice("exclude")...) {
				if err := hub.CheckPattern(p); err != nil {
					return usageError(c, "%v", err)
				}
			}
			state, err := hubStateDir(c)
			if err != nil {
				return err
			}
			hc, err := hubClient(c, state)
			if err != nil {
				return err
			}
			exclude := c.StringSlice("exclude")
			if !c.Bool("with-original") {
				exclude = append(exclude, "original")
			}
			snap, err := hc.Pull(c.Context, repo, hub.PullOptions{Revision: c.String("revision"), Include: c.StringSlice("include"), Exclude: exclude})
			if err != nil {
				if c.Context.Err() != nil {
					return failure(exitInterrupted, "interrupted; partial files are kept and the next pull resumes them")
				}
				return failure(exitError, "%v", err)
			}
			if asJSON {
				return writeJSON(c.App.Writer, snap)
			}
			var total int64
			for _, f := range snap.Files {
				total += f.Size
			}
			w := safeWriter{c.App.Writer}
			fmt.Fprintf(c.App.ErrWriter, "%s at %s: %d file(s), %s (%s downloaded now)\n", safe(repo.ID), snap.Commit, len(snap.Files), humanBytes(total), humanBytes(snap.Downloaded))
			fmt.Fprintln(w, snap.Dir)
			return nil
		},
	}
}

// modelRepo finds the Hub repository of a catalog model (by name or by
// repository), or takes an ORG/NAME the catalog does not know as is.
func modelRepo(model string) (hub.Repo, error) {
	if specs, err := catalog.ModelSpecs(model); err == nil && len(specs) > 0 && specs[0].HFRepo != "" {
		return hub.Repo{Type: hub.Model, ID: specs[0].HFRepo}, nil
	} else if !strings.Contains(model, "/") {
		if err == nil {
			err = fmt.Errorf("the catalog has no Hugging Face repository for %s", model)
		}
		return hub.Repo{}, fmt.Errorf("%w (or give the repository as ORG/NAME)", err)
	}
	r := hub.Repo{Type: hub.Model, ID: model}
	return r, r.Validate()
}
