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
			&cli.DurationFlag{Name: "ttl", Usage: "lifetime (adds exp); 0 mints a token without expiry like tt-inference-server"},
		},
		Action: func(c *cli.Context) error {
			secret, err := auth.ReadSecret(c.String("secret-file"))
			if err != nil {
				return failure(exitError, "%v", err)
			}
			tok, err := auth.Mint(secret, c.String("team"), c.String("token-id"), c.Duration("ttl"), time.Now())
			if err != nil {
				return failure(exitError, "%v", err)
			}
			_, err = fmt.Fprintln(c.App.Writer, tok)
			return err
		},
	}
}
