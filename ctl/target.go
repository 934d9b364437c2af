package ctl

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// targetFlags name the server a workflow command measures (with UNIT, the
// daemon supplies address, model, device and credentials) and the results
// store its run goes to.
func targetFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "server root, e.g. http://127.0.0.1:8000 (no daemon needed)"},
		&cli.StringFlag{Name: "model", Usage: "model name to send (default: the server's first model)"},
		&cli.StringFlag{Name: "catalog-model", Usage: "catalog model for targets, references and status (default: --model)"},
		&cli.StringFlag{Name: "device", Usage: "catalog device for targets (url mode; a unit's own device otherwise)"},
		&cli.StringFlag{Name: "name", Usage: "name runs of a --url server are filed under (default url-MODEL-DEVICE)"},
		devModeFlag("grade a --url server against tt-inference-server's development specs (a unit's own catalog otherwise)"),
		&cli.StringFlag{Name: "api-key", EnvVars: []string{"OPENAI_API_KEY"}, Usage: "bearer token sent as Authorization"},
		&cli.StringFlag{Name: "api-key-file", Usage: "file holding the bearer token"},
		&cli.StringSliceFlag{Name: "header", Usage: "extra request header KEY=VALUE (repeatable)"},
		&cli.StringFlag{Name: "state-dir", Usage: "state folder whose runs/ receives the run (default: the daemon's; without one, ./ttis-state)"},
	}, runPyTargetFlags()...)
}

// resolveTarget finds the server under test: UNIT through ttisd, or --url;
// and the results store its runs go to. purpose and ttl shape the JWT
// minted for a jwt unit (it must outlive the run).
func resolveTarget(c *cli.Context, purpose string, ttl time.Duration) (*target.Target, *runs.Store, error) {
	args, err := positional(c, 0, 1)
	if err != nil {
		return nil, nil, err
	}
	q := target.Query{URL: c.String("url"), Model: c.String("model"), CatalogModel: c.String("catalog-model"),
		Device: c.String("device"), Name: c.String("name"), Purpose: purpose, TokenTTL: ttl, Issuer: "ttisctl"}
	if c.Bool("dev-mode") {
		q.Catalog = catalog.ModeDev
	}
	if q.APIKey, err = apiKey(c); err != nil {
		return nil, nil, err
	}
	if q.Header, err = headers(c); err != nil {
		return nil, nil, err
	}
	if err := runPyTarget(c, &q, len(args) > 0); err != nil {
		return nil, nil, err
	}
	var runsDir string
	switch {
	case q.URL != "" && len(args) > 0:
		return nil, nil, usageError(c, "give either UNIT or --url, not both")
	case q.URL == "" && len(args) == 0:
		return nil, nil, usageError(c, "give a UNIT or --url URL")
	case len(args) == 1:
		u, dir, err := daemonUnit(c, args[0])
		if err != nil {
			return nil, nil, err
		}
		if q.Catalog != "" && u.Catalog != catalog.ModeDev {
			// A unit's server runs its own catalog's spec: grading it
			// against another catalog's would measure one thing and
			// judge another.
			return nil, nil, usageError(c, "unit %s uses the prod catalog: --dev-mode grades only --url servers (set catalog = \"dev\" in the unit to run and grade it with the dev specs)", args[0])
		}
		q.Unit, runsDir = u, dir
	}
	if runsDir == "" || c.String("state-dir") != "" {
		if runsDir, err = storeDir(c); err != nil {
			return nil, nil, failure(exitError, "%v", err)
		}
	}
	t, err := target.Resolve(c.Context, q)
	if err != nil {
		return nil, nil, failure(exitError, "%v", err)
	}
	return t, &runs.Store{Root: runsDir}, nil
}

// daemonUnit asks ttisd for an active unit's view and its results folder.
func daemonUnit(c *cli.Context, name string) (*units.View, string, error) {
	dc := newClient(c)
	d, err := dc.Unit(c.Context, name, 0)
	if err != nil {
		return nil, "", daemonError(err)
	}
	if hasFlag(c, "wait-ready") {
		// A unit ttisd is still starting is waited for, as a --url
		// server that does not answer yet is.
		if d, err = waitUnitActive(c, dc, d); err != nil {
			return nil, "", err
		}
	}
	if d.Listen == "" {
		return nil, "", failure(exitError, "unit %s has no valid version: %s", name, safe(d.LoadError))
	}
	if d.State != api.StateActive {
		return nil, "", failure(exitError, "unit %s is %s (%s), not active: start it with `ttisctl start %s`", name, d.State, d.SubState, name)
	}
	info, err := dc.Info(c.Context)
	if err != nil {
		return nil, "", daemonError(err)
	}
	runsDir := info.RunsDir
	if runsDir == "" {
		runsDir = filepath.Join(info.StateDir, "runs")
	}
	return &d.View, runsDir, nil
}

// apiKey is --api-key, or the contents of --api-key-file.
func apiKey(c *cli.Context) (string, error) {
	key := c.String("api-key")
	if f := c.String("api-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", failure(exitError, "--api-key-file: %v", err)
		}
		key = strings.TrimSpace(string(b))
	}
	return key, nil
}

// headers reads the repeatable --header KEY=VALUE.
func headers(c *cli.Context) (http.Header, error) {
	h := http.Header{}
	for _, kv := range c.StringSlice("header") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageError(c, "--header %q: want KEY=VALUE", kv)
		}
		h.Add(strings.TrimSpace(k), v)
	}
	return h, nil
}

// storeDir finds the results store without a unit: --state-dir, else the
// daemon's (when one answers), else ./ttis-state.
func storeDir(c *cli.Context) (string, error) {
	if d := c.String("state-dir"); d != "" {
		return filepath.Abs(filepath.Join(d, "runs"))
	}
	ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
	defer cancel()
	info, err := daemonclient.New(global(c, "socket")).Info(ctx)
	switch {
	case err == nil && info.RunsDir != "":
		return info.RunsDir, nil
	case err == nil:
		return filepath.Join(info.StateDir, "runs"), nil
	case daemonclient.IsUnreachable(err):
		return filepath.Abs(filepath.Join("ttis-state", "runs"))
	}
	return "", fmt.Errorf("daemon info: %w (or pass --state-dir)", err)
}
