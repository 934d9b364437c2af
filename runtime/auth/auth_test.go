package auth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ttis-dev/ttis/units"
)

func writeSecret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadSecret(t *testing.T) {
	if s, err := ReadSecret(writeSecret(t, "s3cret\n", 0o600)); err != nil || string(s) != "s3cret" {
		t.Errorf("ReadSecret = %q, %v", s, err)
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"group readable": {"x", 0o640, "must not be accessible by group or others"},
		"world readable": {"x", 0o604, "must not be accessible by group or others"},
		"empty":          {"\n", 0o600, "empty"},
	} {
		if _, err := ReadSecret(writeSecret(t, c.content, c.mode)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
	if _, err := ReadSecret(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := ReadSecret(""); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := New(ModeAPIKey, writeSecret(t, "k", 0o644), Policy{}); err == nil {
		t.Error("New accepted a readable secret")
	}
	if _, err := New("basic", "", Policy{}); err == nil {
		t.Error("unknown mode accepted")
	}
}

// A secret file that is a named pipe, a device node, a folder or bigger
// than any secret is refused without being opened or read whole.
func TestReadSecretHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := writeSecret(t, strings.Repeat("k", units.MaxSecretBytes+1), 0o600)
	for path, want := range map[string]string{
		fifo: "secret file " + fifo + ": not a regular file (a named pipe)",
		zero: "secret file " + zero + ": not a regular file (a device node)",
		dir:  "secret file " + dir + ": not a regular file (a folder)",
		big:  "secret file " + big + ": 65537 bytes, larger than the 65536-byte limit",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadSecret(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != want {
				t.Errorf("%s: error %v, want %q", path, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ReadSecret(%s) blocked for 30s", path)
		}
	}
}

func TestAPIKey(t *testing.T) {
	v, err := New(ModeAPIKey, writeSecret(t, "key-123\n", 0o600), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for header, ok := range map[string]bool{
		"Bearer key-123":  true,
		"bearer key-123":  true,
		"Bearer key-1234": false,
		"Bearer key-12":   false,
		"Basic key-123":   false,
		"key-123":         false,
		"":                false,
		"Bearer ":         false,
	} {
		_, err := v.Verify([]byte(header))
		if (err == nil) != ok {
			t.Errorf("Verify(%q) = %v, want ok=%v", header, err, ok)
		}
		if err != nil && !errors.Is(err, ErrUnauthorized) {
			t.Errorf("error %v does not wrap ErrUnauthorized", err)
		}
	}
}

func TestNone(t *testing.T) {
	v, err := New("", "", Policy{})
	if err != nil || v.Mode() != ModeNone {
		t.Fatal(v, err)
	}
	if _, err := v.Verify(nil); err != nil {
		t.Error(err)
	}
}

func TestJWT(t *testing.T) {
	secret := []byte("jwt-secret")
	path := writeSecret(t, string(secret), 0o600)
	// A unit that opted out of exp, as tt-inference-server's tokens lack it.
	v, err := New(ModeJWT, path, Policy{AllowNoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sign := func(m jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := jwt.MapClaims{"team_id": "tenstorrent", "token_id": "debug-test"}
	minted, err := Mint(secret, "team", "id", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	payload := b64([]byte(`{"team_id":"tenstorrent","token_id":"debug-test"}`))
	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"tt-inference-server token without exp", sign(jwt.SigningMethodHS256, secret, good), true},
		{"minted with ttl", minted, true},
		{"valid exp and nbf", sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"team_id": "t", "token_id": "i", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Hour).Unix()}), true},
		{"expired", sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"team_id": "t", "token_id": "i", "exp": now.Add(-time.Hour).Unix()}), false},
		{"not yet valid", sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"team_id": "t", "token_id": "i", "nbf": now.Add(time.Hour).Unix()}), false},
		{"wrong secret", sign(jwt.SigningMethodHS256, []byte("other"), good), false},
		{"HS512", sign(jwt.SigningMethodHS512, secret, good), false},
		{"HS384", sign(jwt.SigningMethodHS384, secret, good), false},
		{"alg none", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good), false},
		{"alg none hand-made", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + ".", false},
		{"RS256 header with HMAC signature", func() string {
			head := b64([]byte(`{"alg":"RS256","typ":"JWT"}`))
			sig, _ := jwt.SigningMethodHS256.Sign(head+"."+payload, secret)
			return head + "." + payload + "." + b64(sig)
		}(), false},
		{"missing team_id", sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"token_id": "i"}), false},
		{"garbage", "not.a.jwt", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := v.Verify([]byte("Bearer " + c.token))
			if (err == nil) != c.ok {
				t.Fatalf("Verify = %+v, %v; want ok=%v", id, err, c.ok)
			}
			if c.ok && (id.TeamID == "" || id.TokenID == "") {
				t.Errorf("identity %+v", id)
			}
		})
	}
	if _, err := Mint(secret, "", "x", 0, now); err == nil {
		t.Error("Mint accepted an empty team")
	}
}

// By default a token must expire, and no later than the unit's maximum
// lifetime allows: a leaked token dies within it.
func TestJWTLifetimePolicy(t *testing.T) {
	secret := []byte("jwt-secret")
	path := writeSecret(t, string(secret), 0o600)
	now := time.Unix(1_800_000_000, 0)
	sign := func(claims jwt.MapClaims) string {
		claims["team_id"], claims["token_id"] = "t", "i"
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mint := func(ttl time.Duration) string {
		s, err := Mint(secret, "t", "i", ttl, now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	strict := Policy{MaxLifetime: 24 * time.Hour}
	cases := []struct {
		name   string
		policy Policy
		token  string
		want   string // "" accepts; else a part of the error
	}{
		{"no exp refused by default", strict, sign(jwt.MapClaims{}), "has no exp claim"},
		{"no exp refused without a max too", Policy{}, mint(0), "has no exp claim"},
		{"no exp with allow_no_expiry", Policy{AllowNoExpiry: true, MaxLifetime: time.Hour}, mint(0), ""},
		{"ttl within the max", strict, mint(time.Hour), ""},
		{"ttl of exactly the max", strict, mint(24 * time.Hour), ""},
		{"ttl over the max", strict, mint(25 * time.Hour), "exceeds this unit's max_token_lifetime of 24h0m0s"},
		{"exp far ahead without iat", strict, sign(jwt.MapClaims{"exp": now.Add(48 * time.Hour).Unix()}), "max_token_lifetime"},
		{"old iat, long life, exp near", strict, sign(jwt.MapClaims{"iat": now.Add(-47 * time.Hour).Unix(), "exp": now.Add(time.Hour).Unix()}), "max_token_lifetime"},
		{"no max: any exp", Policy{}, mint(1000 * time.Hour), ""},
		{"expired", strict, sign(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()}), "expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := New(ModeJWT, path, c.policy)
			if err != nil {
				t.Fatal(err)
			}
			v.(*jwtVerifier).now = func() time.Time { return now }
			_, err = v.Verify([]byte("Bearer " + c.token))
			if c.want == "" {
				if err != nil {
					t.Fatalf("Verify: %v, want ok", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify: %v, want unauthorized with %q", err, c.want)
			}
		})
	}
}
