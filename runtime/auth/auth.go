// Package auth checks the credentials a unit's inference API requires:
// none, a static API key, or an HS256 JWT as issued by the system ttis
// replaces ({"team_id":…,"token_id":…} claims). Secrets are read from files
// that must not be readable by group or others.
package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ttis-dev/ttis/units/hardened"
)

// Modes a unit's [auth] section may name.
const (
	ModeNone   = "none"
	ModeAPIKey = "api-key"
	ModeJWT    = "jwt"
)

// Identity is who a request authenticated as.
type Identity struct {
	// TeamID and TokenID come from a JWT; both are empty for api-key and
	// none.
	TeamID  string
	TokenID string
}

// ErrUnauthorized is wrapped by every verification failure.
var ErrUnauthorized = errors.New("unauthorized")

// Verifier checks an Authorization header value.
type Verifier interface {
	// Verify checks the raw Authorization header ("Bearer …"); an empty
	// header is a failure for every mode but none.
	Verify(header []byte) (Identity, error)
	// Mode names the verifier's mode.
	Mode() string
}

// Policy is what a jwt verifier demands of a token's lifetime.
type Policy struct {
	// MaxLifetime bounds exp: at most this far after the verifier's now
	// and after the token's iat. 0 sets no bound.
	MaxLifetime time.Duration
	// AllowNoExpiry accepts tokens without exp (which then never expire);
	// by default exp is required.
	AllowNoExpiry bool
}

// leeway is the clock skew tolerated between the minting host and this one.
const leeway = 5 * time.Second

// New builds the verifier for a mode, reading the secret file for api-key
// and jwt; p applies to jwt. An empty mode means none.
func New(mode, secretFile string, p Policy) (Verifier, error) {
	switch mode {
	case "", ModeNone:
		return none{}, nil
	case ModeAPIKey, ModeJWT:
	default:
		return nil, fmt.Errorf("auth mode %q: want none, api-key or jwt", mode)
	}
	secret, err := ReadSecret(secretFile)
	if err != nil {
		return nil, fmt.Errorf("auth %s: %w", mode, err)
	}
	if mode == ModeAPIKey {
		return apiKey{sum: sha256.Sum256(secret)}, nil
	}
	return &jwtVerifier{secret: secret, now: time.Now, policy: p}, nil
}

// Bounds on reading a secret file: secrets are tens of bytes, and the file
// is read the hardened way (units/hardened: never blocking on a pipe or a
// device node).
const (
	MaxSecretBytes    = 64 << 10
	secretReadTimeout = 10 * time.Second
)

// ReadSecret reads a secret file, refusing files that group or others may
// read, anything but a regular file of at most MaxSecretBytes, and empty
// secrets. Surrounding whitespace (a trailing newline) is dropped.
func ReadSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("secret_file is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretReadTimeout)
	defer cancel()
	f, err := hardened.Open(ctx, path, MaxSecretBytes)
	if err != nil {
		return nil, fmt.Errorf("secret file %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secret file %s has mode %04o: it must not be accessible by group or others (chmod 600)", path, perm)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxSecretBytes+1)); err != nil {
		return nil, fmt.Errorf("read secret %s: %w", path, err)
	}
	if buf.Len() > MaxSecretBytes {
		return nil, fmt.Errorf("secret file %s: larger than the %d-byte limit", path, MaxSecretBytes)
	}
	secret := bytes.TrimSpace(buf.Bytes())
	if len(secret) == 0 {
		return nil, fmt.Errorf("secret file %s is empty", path)
	}
	return secret, nil
}

func bearer(header []byte) ([]byte, error) {
	const prefix = "bearer "
	if len(header) == 0 {
		return nil, fmt.Errorf("%w: missing Authorization header (want \"Bearer <token>\")", ErrUnauthorized)
	}
	if len(header) <= len(prefix) || !bytes.EqualFold(header[:len(prefix)], []byte(prefix)) {
		return nil, fmt.Errorf("%w: Authorization header is not a Bearer token", ErrUnauthorized)
	}
	return bytes.TrimSpace(header[len(prefix):]), nil
}

type none struct{}

func (none) Verify([]byte) (Identity, error) { return Identity{}, nil }
func (none) Mode() string                    { return ModeNone }

type apiKey struct{ sum [sha256.Size]byte }

// Verify compares hashes of the key in constant time, so neither the key's
// content nor its length leaks through timing.
func (k apiKey) Verify(header []byte) (Identity, error) {
	tok, err := bearer(header)
	if err != nil {
		return Identity{}, err
	}
	got := sha256.Sum256(tok)
	if subtle.ConstantTimeCompare(got[:], k.sum[:]) != 1 {
		return Identity{}, fmt.Errorf("%w: invalid API key", ErrUnauthorized)
	}
	return Identity{}, nil
}

func (apiKey) Mode() string { return ModeAPIKey }

// Claims are the claims of a ttis (and tt-inference-server) JWT.
type Claims struct {
	TeamID  string `json:"team_id"`
	TokenID string `json:"token_id"`
	jwt.RegisteredClaims
}

type jwtVerifier struct {
	secret []byte
	now    func() time.Time
	policy Policy
}

func (v *jwtVerifier) Mode() string { return ModeJWT }

// Verify accepts only HS256 tokens signed with the secret, requires exp
// (unless the policy allows none) within the policy's maximum lifetime,
// honours nbf when present, and requires team_id and token_id.
func (v *jwtVerifier) Verify(header []byte) (Identity, error) {
	tok, err := bearer(header)
	if err != nil {
		return Identity{}, err
	}
	var c Claims
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(v.now), jwt.WithLeeway(leeway)}
	if !v.policy.AllowNoExpiry {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	_, err = jwt.ParseWithClaims(string(tok), &c, func(*jwt.Token) (any, error) { return v.secret, nil }, opts...)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenRequiredClaimMissing) {
			return Identity{}, fmt.Errorf("%w: token has no exp claim; this unit requires tokens that expire (mint one with ttisctl token --ttl)", ErrUnauthorized)
		}
		return Identity{}, fmt.Errorf("%w: invalid token: %w", ErrUnauthorized, err)
	}
	if max := v.policy.MaxLifetime; max > 0 && c.ExpiresAt != nil {
		exp := c.ExpiresAt.Time
		if exp.Sub(v.now()) > max+leeway || (c.IssuedAt != nil && exp.Sub(c.IssuedAt.Time) > max+leeway) {
			return Identity{}, fmt.Errorf("%w: token lifetime exceeds this unit's max_token_lifetime of %s (mint a shorter one)", ErrUnauthorized, max)
		}
	}
	if c.TeamID == "" || c.TokenID == "" {
		return Identity{}, fmt.Errorf("%w: token lacks team_id or token_id claim", ErrUnauthorized)
	}
	return Identity{TeamID: c.TeamID, TokenID: c.TokenID}, nil
}

// Mint signs an HS256 token with team_id and token_id claims; a positive
// ttl adds iat and exp. A ttl of 0 mints a token without exp, which only
// units with allow_no_expiry accept.
func Mint(secret []byte, teamID, tokenID string, ttl time.Duration, now time.Time) (string, error) {
	if teamID == "" || tokenID == "" {
		return "", errors.New("mint token: team and token id must not be empty")
	}
	if ttl < 0 {
		return "", fmt.Errorf("mint token: negative ttl %s", ttl)
	}
	c := Claims{TeamID: teamID, TokenID: tokenID}
	if ttl > 0 {
		c.IssuedAt = jwt.NewNumericDate(now)
		c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	return s, nil
}
