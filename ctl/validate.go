package ctl

import (
	"fmt"

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
		Usage:     "check unit files offline (the same checks ttisd runs, plus conflicts among the files)",
		ArgsUsage: "FILE...",
		Description: "Prints \"OK path\" for each good file and every problem of each bad one as\n" +
			"path:line:col: field: message. Exits 1 if any file failed, 2 on usage errors.\n" +
			"-o json prints one object per file with its errors.",
		Action: func(c *cli.Context) error {
			paths, err := positional(c, 1, -1)
			if err != nil {
				return err
			}
			results := validateFiles(paths)
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

// validateFiles loads every file, then checks the good ones against each
// other in name order, as LoadDir does for a folder.
func validateFiles(paths []string) []validateResult {
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
