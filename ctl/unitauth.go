package ctl

import (
	"fmt"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/runtime/auth"
)

// unitBearer returns the bearer token ttisctl sends to a unit with the
// given auth mode: none for mode none or when the user passed a key
// (haveKey), the key itself for api-key, or a JWT minted from the unit's
// secret for jwt, with token id purpose and lifetime ttl. Reading the secret
// needs the permissions the daemon's user has.
func unitBearer(name, mode, secretFile, purpose string, ttl time.Duration, haveKey bool) (string, error) {
	switch mode {
	case "", auth.ModeNone:
		return "", nil
	case auth.ModeAPIKey, auth.ModeJWT:
	default:
		return "", fmt.Errorf("unit %s: unknown auth mode %q", name, mode)
	}
	if haveKey {
		return "", nil
	}
	secret, err := auth.ReadSecret(secretFile)
	if err != nil {
		return "", fmt.Errorf("unit %s uses %s auth: %w (or pass --api-key)", name, mode, err)
	}
	if mode == auth.ModeAPIKey {
		return strings.TrimSpace(string(secret)), nil
	}
	tok, err := auth.Mint(secret, "ttisctl", purpose, ttl, time.Now())
	if err != nil {
		return "", fmt.Errorf("unit %s: mint token: %w", name, err)
	}
	return tok, nil
}
