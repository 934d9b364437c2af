package ctl

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/units"
)

// validateResult is one file's verdict in `ttisctl validate -o json`.
type validateResult struct {
	Path   string         `json:"path"`
	OK     bool           `json:"ok"`
	Errors []*units.Error `json:"errors,omitempty"`
}

// validateCommand checks unit files offline with the daemon's own checks,
// including chip and address conflicts among the files given.
func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check unit files offline (the same checks ttisd runs before a start, plus conflicts among the files)",
		ArgsUsage: "FILE...",
		Description: "Runs what ttisd runs before it starts a unit, with the same code: the file's\n" +
			"own checks (fields, catalog, chips and listen addresses, among the files given)\n" +
			"and the pre-start checks (a cpu unit's model file inside the model folders;\n" +
			"secret files readable, mode 0600, not empty). The model folders are\n" +
			"--model-dir, else the running daemon's (model_dirs), else a default install's\n" +
			"(" + strings.Join(defaultModelDirs(), ", ") + ").\n" +
			"Prints \"OK path\" for each good file and every problem of each bad one as\n" +
			"path:line:col: field: message. Exits 1 if any file failed, 2 on usage errors.\n" +
			"-o json prints one object per file with its errors.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "model-dir", Usage: "a folder cpu units may load model files from (repeatable; default: the daemon's model_dirs)"},
		},
		Action: func(c *cli.Context) error {
			paths, err := positional(c, 1, -1)
			if err != nil {
				return err
			}
			results := validateFiles(paths, units.Host{ModelDirs: modelDirs(c)})
			failed := false
			for _, r := range results {
				failed = failed || !r.OK
			}
			if err := printValidate(c, results); err != nil {
				return err
			}
			if failed {
				return cli.Exit("", exitError)
			}
			return nil
		},
	}
}

// defaultStateDir is ttisd's state_dir when ttisd.toml names none.
const defaultStateDir = "/var/lib/ttis"

// defaultModelDirs are the model folders of a ttisd without ttisd.toml:
// its state folder's models/, /var/lib/ttis/models and the Hub cache.
func defaultModelDirs() []string {
	return append(units.DefaultModelDirs(defaultStateDir), filepath.Join(defaultStateDir, "hub"))
}

// modelDirs are the folders the pre-start checks accept model files from:
// --model-dir, else the daemon's when one answers, else a default
// install's.
func modelDirs(c *cli.Context) []string {
	if dirs := c.StringSlice("model-dir"); len(dirs) > 0 {
		return dirs
	}
	ctx, cancel := context.WithTimeout(c.Context, 2*time.Second)
	defer cancel()
	if info, err := newClient(c).Info(ctx); err == nil && len(info.ModelDirs) > 0 {
		return info.ModelDirs
	}
	return defaultModelDirs()
}

// validateFiles loads every file, runs the pre-start checks on each good
// one, then checks them against each other in name order, as LoadDir does
// for a folder.
func validateFiles(paths []string, host units.Host) []validateResult {
	results := make([]validateResult, len(paths))
	loaded := map[string]int{}
	var good []*units.Unit
	for i, p := range paths {
		results[i].Path = p
		u, err := units.Load(p)
		if err != nil {
			results[i].Errors = units.Errors(err)
			continue
		}
		if j, dup := loaded[u.Name]; dup {
			results[i].Errors = units.ErrorList{{File: p, Msg: fmt.Sprintf("unit name %s is also the name of %s", u.Name, paths[j])}}
			continue
		}
		loaded[u.Name] = i
		good = append(good, u)
		if err := units.Preflight(u, host); err != nil {
			results[i].Errors = append(results[i].Errors, units.Errors(err)...)
		}
	}
	for name, errs := range units.CheckConflicts(good, nil) {
		i := loaded[name]
		results[i].Errors = append(results[i].Errors, errs...)
	}
	for i := range results {
		results[i].OK = len(results[i].Errors) == 0
	}
	return results
}

func printValidate(c *cli.Context, results []validateResult) error {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.App.Writer, results)
	}
	// One escaped line per result: a file name or a quoted value with a
	// newline in it must not forge an "OK" line or move the cursor.
	w := c.App.Writer
	for _, r := range results {
		if r.OK {
			if _, err := fmt.Fprintf(w, "OK %s\n", safe(r.Path)); err != nil {
				return err
			}
			continue
		}
		for _, e := range r.Errors {
			if _, err := fmt.Fprintln(w, safe(e.Error())); err != nil {
				return err
			}
		}
	}
	return nil
}
