package ctl

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/runtime/auth"
)

// run.py's workflow settings that ttisctl's workflow commands honour as
// run.py does (seed 000/001, tt-inference-server.md §1.1), each a flag
// whose environment variable it beats: --service-port (SERVICE_PORT),
// --jwt-secret (JWT_SECRET), and the wait for a server that is still
// starting.

// runPyTargetFlags are the target flags that follow run.py.
func runPyTargetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "service-port", EnvVars: []string{"SERVICE_PORT"},
			Usage: "measure http://127.0.0.1:PORT when neither UNIT nor --url is given (run.py's --service-port)"},
		&cli.StringFlag{Name: "jwt-secret", EnvVars: []string{"JWT_SECRET"},
			Usage: "--url: send the bearer run.py mints from this secret (HS256 {\"team_id\": \"tenstorrent\", \"token_id\": \"debug-test\"}, no exp); --api-key and --api-key-file given on the command line win"},
		&cli.DurationFlag{Name: "wait-ready", Value: target.DefaultReadyTimeout,
			Usage: "wait this long for a server that is still starting (GET /health, or a unit that is activating), with a line every 30 s; 0 fails at once"},
	}
}

// fromCommandLine reports whether flag name was given on the command line
// rather than taken from its environment variable env. A value equal to
// the variable's counts as the variable's: either way it is the same.
func fromCommandLine(c *cli.Context, name, env string) bool {
	if !c.IsSet(name) {
		return false
	}
	v, ok := os.LookupEnv(env)
	return !ok || v == "" || fmt.Sprint(c.Value(name)) != v
}

// runPyTarget fills the parts of q that follow run.py: the URL from
// --service-port, the bearer from --jwt-secret, the readiness wait. A
// bearer given on the command line (--api-key, --api-key-file,
// --jwt-secret) wins over one from the environment; of the environment's,
// JWT_SECRET wins over OPENAI_API_KEY, as run.py mints a token whenever it
// has a secret.
func runPyTarget(c *cli.Context, q *target.Query, unit bool) error {
	q.Ready = target.Ready{Timeout: c.Duration("wait-ready"), Progress: func(line string) {
		fmt.Fprintf(c.App.ErrWriter, "%s\n", safe(line))
	}}
	if c.Duration("wait-ready") < 0 {
		return usageError(c, "--wait-ready %s: want 0 or more", c.Duration("wait-ready"))
	}
	portFlag := fromCommandLine(c, "service-port", "SERVICE_PORT")
	switch {
	case portFlag && (unit || q.URL != ""):
		return usageError(c, "--service-port names a server on this host: give it instead of UNIT or --url, not with them")
	case !unit && q.URL == "" && c.IsSet("service-port"):
		port := c.Int("service-port")
		if port < 1 || port > 65535 {
			return usageError(c, "--service-port %d (SERVICE_PORT): want a port in 1..65535", port)
		}
		q.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	secretFlag := fromCommandLine(c, "jwt-secret", "JWT_SECRET")
	keyFlag := fromCommandLine(c, "api-key", "OPENAI_API_KEY") || c.IsSet("api-key-file")
	switch {
	case secretFlag && unit:
		return usageError(c, "--jwt-secret mints a token for a --url server; a unit's token is minted from its own secret")
	case secretFlag && keyFlag:
		return usageError(c, "give --jwt-secret or --api-key/--api-key-file, not both")
	case unit || keyFlag || c.String("jwt-secret") == "":
		return nil
	}
	tok, err := auth.Mint([]byte(c.String("jwt-secret")), "tenstorrent", "debug-test", 0, time.Now())
	if err != nil {
		return failure(exitError, "--jwt-secret: %v", err)
	}
	q.APIKey = tok
	return nil
}

// waitUnitActive waits, up to --wait-ready, for a unit that ttisd is still
// starting (activating: loading its model, or between restarts) to become
// active, with a line every 30 s; the unit's last detail as ttisd has it.
func waitUnitActive(c *cli.Context, dc *daemonclient.Client, d api.UnitDetail) (api.UnitDetail, error) {
	bound := c.Duration("wait-ready")
	if d.State != api.StateActivating || bound <= 0 {
		return d, nil
	}
	start := time.Now()
	var last time.Time
	for d.State == api.StateActivating {
		waited := time.Since(start)
		if waited >= bound {
			return d, failure(exitError, "unit %s is still %s (%s) after %s: raise --wait-ready, or see `ttisctl logs %s`",
				d.Name, d.State, d.SubState, waited.Round(time.Second), d.Name)
		}
		if last.IsZero() || time.Since(last) >= 30*time.Second {
			last = time.Now()
			fmt.Fprintf(c.App.ErrWriter, "waiting for unit %s to be active: %s (%s), %s of %s\n", safe(d.Name), d.State, d.SubState,
				waited.Round(time.Second), bound)
		}
		select {
		case <-c.Context.Done():
			return d, c.Context.Err()
		case <-time.After(min(2*time.Second, bound-waited)):
		}
		var err error
		if d, err = dc.Unit(c.Context, d.Name, 0); err != nil {
			return d, daemonError(err)
		}
	}
	return d, nil
}
