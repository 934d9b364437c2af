package ctl

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime/auth"
)

// tokenCommand mints an HS256 JWT that units with [auth] mode = "jwt"
// accept.
func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "mint a JWT for units with auth mode jwt (printed on stdout)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "secret-file", Required: true, Usage: "file holding the unit's JWT secret (mode 0600)"},
			&cli.StringFlag{Name: "team", Required: true, Usage: "team_id claim"},
			&cli.StringFlag{Name: "token-id", Required: true, Usage: "token_id claim"},
			&cli.DurationFlag{Name: "ttl", Usage: "lifetime (adds iat and exp), e.g. 8h; at most the unit's auth.max_token_lifetime (default 24h)"},
			&cli.BoolFlag{Name: "no-expiry", Usage: "mint a token without exp, like tt-inference-server; only units with auth.allow_no_expiry = true accept it, and it works until the secret changes"},
		},
		Action: func(c *cli.Context) error {
			// A token that never expires must be asked for by name: a
			// leaked one works until the secret is replaced.
			ttl, noExpiry := c.Duration("ttl"), c.Bool("no-expiry")
			switch {
			case c.IsSet("ttl") && noExpiry:
				return usageError(c, "--ttl and --no-expiry exclude each other")
			case noExpiry:
				ttl = 0
			case !c.IsSet("ttl"):
				return usageError(c, "say how long the token lives: --ttl DURATION (e.g. --ttl 8h), or --no-expiry for a token that never expires")
			case ttl <= 0:
				return usageError(c, "--ttl %s: want a positive duration (or --no-expiry)", ttl)
			}
			secret, err := auth.ReadSecret(c.String("secret-file"))
			if err != nil {
				return failure(exitError, "%v", err)
			}
			tok, err := auth.Mint(secret, c.String("team"), c.String("token-id"), ttl, time.Now())
			if err != nil {
				return failure(exitError, "%v", err)
			}
			_, err = fmt.Fprintln(c.App.Writer, tok)
			return err
		},
	}
}
