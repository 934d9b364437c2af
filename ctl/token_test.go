package ctl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/auth"
)

func TestTokenCommand(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "jwt")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := App("test")
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"ttisctl", "token", "--secret-file", secret, "--team", "tenstorrent", "--token-id", "ci", "--ttl", "1h"}); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.ModeJWT, secret, auth.Policy{MaxLifetime: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify([]byte("Bearer " + strings.TrimSpace(out.String())))
	if err != nil || id.TeamID != "tenstorrent" || id.TokenID != "ci" {
		t.Errorf("minted token verifies as %+v, %v", id, err)
	}
	// A secret readable by others is refused.
	if err := os.Chmod(secret, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := app.Run([]string{"ttisctl", "token", "--secret-file", secret, "--team", "t", "--token-id", "i", "--ttl", "1h"}); err == nil {
		t.Error("minted with a world-readable secret")
	}
}

// A token without expiry must be asked for with --no-expiry; neither flag,
// both, or a non-positive --ttl is a usage error.
func TestTokenRequiresLifetime(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "jwt")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"ttisctl", "token", "--secret-file", secret, "--team", "t", "--token-id", "i"}
	for _, extra := range [][]string{nil, {"--ttl", "1h", "--no-expiry"}, {"--ttl", "0"}, {"--ttl", "-1h"}} {
		app := App("test")
		app.Writer = &bytes.Buffer{}
		err := app.Run(append(base, extra...))
		var ec interface{ ExitCode() int }
		if !errors.As(err, &ec) || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), "--no-expiry") {
			t.Errorf("token %v: %v, want a usage error naming --no-expiry", extra, err)
		}
	}
	app := App("test")
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run(append(base, "--no-expiry")); err != nil {
		t.Fatal(err)
	}
	tok := []byte("Bearer " + strings.TrimSpace(out.String()))
	strict, err := auth.New(auth.ModeJWT, secret, auth.Policy{MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strict.Verify(tok); err == nil {
		t.Error("a token without exp passed the default policy")
	}
	lax, err := auth.New(auth.ModeJWT, secret, auth.Policy{AllowNoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lax.Verify(tok); err != nil {
		t.Errorf("--no-expiry token refused by a unit that allows it: %v", err)
	}
}
