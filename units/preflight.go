package units

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ttis-dev/ttis/units/hardened"
)

// Host is what the pre-start checks know of the host that runs a unit.
type Host struct {
	// ModelDirs are the folders a cpu unit's model file may live in
	// (ttisd.toml model_dirs, ttisd serve --model-dir).
	ModelDirs []string
}

// Preflight runs the checks a valid unit (Load) must pass before its
// server starts, those that depend on the host rather than on the file:
// a cpu unit's model file inside the model folders, and the secret files
// (auth, Hugging Face token) readable, private and not empty. ttisd runs
// it before every start of a server and fails a unit that does not pass
// with the reason instead of restarting it; ttisd serve runs it before it
// serves; ttisctl validate runs it on every file. One function, so that
// validate says OK only to what the daemon will start. Every problem is
// returned at once, with the file, line and field.
func Preflight(u *Unit, h Host) error {
	c := &errorsOf{file: u.Path, pos: u.pos}
	if u.Runtime == RuntimeCPU && u.Model != "" {
		if err := CheckModelPath(u.Model, h.ModelDirs); err != nil {
			c.add("model", "%v", err)
		}
	}
	if u.Auth.Mode == AuthAPIKey || u.Auth.Mode == AuthJWT {
		if _, err := ReadSecret(u.Auth.SecretFile); err != nil {
			c.add("auth.secret_file", "%v", err)
		}
	}
	if u.Vllm.HFTokenFile != "" {
		if _, err := ReadSecret(u.Vllm.HFTokenFile); err != nil {
			c.add("vllm.hf_token_file", "%v", err)
		}
	}
	if len(c.list) == 0 {
		return nil
	}
	sortErrors(c.list)
	return c.list
}

// MaxSecretBytes bounds a secret file: an API key, a JWT secret or a
// Hugging Face token is well under a kilobyte.
const MaxSecretBytes = 64 << 10

// secretReadTimeout bounds reading one secret file.
const secretReadTimeout = 10 * time.Second

// ReadSecret reads a secret file (an API key, a JWT secret, a Hugging Face
// token) the way the unit loader reads unit files: checked with stat
// before it is opened, opened non-blocking (a named pipe never blocks the
// reader), checked again on the descriptor, and read up to MaxSecretBytes.
// It refuses what is not a regular file, a file group or others may read
// or write, and an empty secret. Surrounding whitespace (a trailing
// newline) is dropped. Errors name the file, never its content.
func ReadSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("secret_file is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretReadTimeout)
	defer cancel()
	f, err := hardened.Open(ctx, path, MaxSecretBytes)
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %v", path, hardened.WithoutPath(err))
	}
	defer f.Close()
	// The mode is read from the descriptor that is read, so a file
	// swapped in after the check cannot slip past it.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %v", path, unwrapPathError(err))
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secret file %s has mode %04o: it must not be accessible by group or others (chmod 600)", path, perm)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxSecretBytes+1)); err != nil {
		return nil, fmt.Errorf("secret file %s: %v", path, unwrapPathError(err))
	}
	if buf.Len() > MaxSecretBytes {
		return nil, fmt.Errorf("secret file %s is larger than %d bytes; a secret is a line", path, MaxSecretBytes)
	}
	secret := buf.Bytes()
	secret = bytes.TrimSpace(secret)
	if len(secret) == 0 {
		return nil, fmt.Errorf("secret file %s is empty: write the key or secret into it (mode 0600)", path)
	}
	return secret, nil
}
