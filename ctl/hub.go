package ctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// hubFlags configure the Hugging Face Hub client of the commands that pull
// eval datasets or model weights.
func hubFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "hub-cache", EnvVars: []string{"TTIS_HUB_CACHE"}, Usage: "Hugging Face cache folder (default: the daemon's hub_cache, else STATE/hub)"},
		&cli.StringFlag{Name: "hf-endpoint", EnvVars: []string{"HF_ENDPOINT"}, Usage: "Hugging Face Hub or mirror URL (default: the daemon's hf_endpoint, else " + hub.DefaultEndpoint + ")"},
		&cli.StringFlag{Name: "hf-token-file", EnvVars: []string{"TTIS_HF_TOKEN_FILE"}, Usage: "file (mode 0600) holding a Hugging Face token, for gated datasets and weights"},
		&cli.StringFlag{Name: "hf-token", EnvVars: []string{"HF_TOKEN"}, Usage: "Hugging Face token (run.py's --hf-token; on the command line other users see it in ps: prefer HF_TOKEN or --hf-token-file, which wins when both are set)"},
		&cli.BoolFlag{Name: "offline", EnvVars: []string{"HF_HUB_OFFLINE"}, Usage: "use only the Hub cache; fail naming what is missing"},
	}
}

// hubClient builds the Hub client from the flags; stateDir is the state
// folder whose hub/ is the default cache. Progress goes to stderr.
func hubClient(c *cli.Context, stateDir string) (*hub.Client, error) {
	cfg := hub.Config{Endpoint: c.String("hf-endpoint"), CacheDir: c.String("hub-cache"), Offline: c.Bool("offline"),
		UserAgent: "ttisctl/" + c.App.Version, Progress: newHubProgress(c).report}
	if cfg.CacheDir == "" || cfg.Endpoint == "" {
		// The daemon's settings, when one answers, so that ttisctl and
		// scheduled runs share one cache.
		ctx, cancel := context.WithTimeout(c.Context, 2*time.Second)
		info, err := daemonclient.New(global(c, "socket")).Info(ctx)
		cancel()
		if err == nil {
			if cfg.CacheDir == "" {
				cfg.CacheDir = info.HubCache
			}
			if cfg.Endpoint == "" {
				cfg.Endpoint = info.HFEndpoint
			}
		}
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = hub.DefaultCacheDir(stateDir)
	}
	tok, err := hub.ReadToken(c.String("hf-token-file"))
	if err != nil {
		return nil, failure(exitError, "--hf-token-file: %v", err)
	}
	if tok == "" {
		// run.py's HF_TOKEN; a token file wins over it.
		tok = strings.TrimSpace(c.String("hf-token"))
	}
	cfg.Token = tok
	hc, err := hub.New(cfg)
	if err != nil {
		return nil, failure(exitUsage, "%v", err)
	}
	return hc, nil
}

// hubStateDir is the state folder of the commands that only pull: --state-dir,
// else the daemon's, else ./ttis-state.
func hubStateDir(c *cli.Context) (string, error) {
	runsDir, err := storeDir(c)
	if err != nil {
		return "", err
	}
	return filepath.Dir(runsDir), nil
}

// hubProgress shows downloads on stderr: a line per finished file, and on
// a terminal the running byte count of the current one. Names from the
// Hub are escaped (safe) before the terminal sees them.
type hubProgress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
}

func newHubProgress(c *cli.Context) *hubProgress {
	p := &hubProgress{w: c.App.ErrWriter}
	if f, ok := c.App.ErrWriter.(*os.File); ok && !c.Bool("no-progress") && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *hubProgress) report(pr hub.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := safe(pr.Repo.String() + " " + pr.Path)
	switch {
	case pr.Cached:
		fmt.Fprintf(p.w, "cached  %s (%s)\n", name, humanBytes(pr.Total))
	case pr.Finished:
		if p.tty {
			fmt.Fprint(p.w, "\r\033[K")
		}
		resumed := ""
		if pr.Resumed > 0 {
			resumed = fmt.Sprintf(", resumed at %s", humanBytes(pr.Resumed))
		}
		fmt.Fprintf(p.w, "fetched %s (%s%s)\n", name, humanBytes(pr.Total), resumed)
	case p.tty && pr.Total > 0:
		fmt.Fprintf(p.w, "\r\033[K%s %s / %s (%d%%)", name, humanBytes(pr.Done), humanBytes(pr.Total), 100*pr.Done/pr.Total)
	}
}
