package ctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	v, err := auth.New(auth.ModeJWT, secret)
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
	if err := app.Run([]string{"ttisctl", "token", "--secret-file", secret, "--team", "t", "--token-id", "i"}); err == nil {
		t.Error("minted with a world-readable secret")
	}
}
