// Package target finds the server a workflow measures, the one way every
// caller does it (ttisctl bench, eval and release, and ttisd's schedules):
// from a unit (as the daemon's control API or the unit file describes it)
// or from a URL, it works out the address, the credentials (the unit's API
// key, or a JWT minted from its secret), what the server says it serves
// (its model card), the catalog entry that grades it, and the conditions
// every result records (runtime, simulated or not, time scale, device,
// chips, model file, versions).
package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Query says which server to resolve: Unit or URL, not both.
type Query struct {
	// Unit is the unit's view (units.View): from the daemon's control API
	// (ttisctl) or from its unit file ((*units.Unit).View, ttisd's
	// schedules), the same derivation either way.
	Unit *units.View
	URL  string
	// Model is the name to send (default: what the server lists first, or
	// the unit's catalog model); CatalogModel selects the catalog entry
	// (default: Model); Device the catalog device (URL mode; a unit's own
	// device otherwise).
	Model        string
	CatalogModel string
	Device       string
	// Catalog is the catalog mode that grades a URL target ("dev"; "" is
	// prod); a unit's own catalog wins when unset.
	Catalog string
	// Name files a URL target's runs (default "url-<model>-<device>").
	Name string
	// APIKey is sent as a bearer token and wins over the unit's own auth.
	APIKey string
	// Header is sent with every request (in addition to the bearer).
	Header http.Header
	// Purpose and TokenTTL shape a JWT minted for a jwt unit: the token id
	// ("bench", "eval", "release", "schedule") and its lifetime, which must
	// cover the whole run. Issuer names who minted it ("ttisctl", "ttisd").
	Purpose  string
	TokenTTL time.Duration
	Issuer   string
	// Now is the clock for minted tokens (time.Now when nil).
	Now func() time.Time
	// Ready bounds the wait for a server that is still starting (zero:
	// none, the server must answer at once).
	Ready Ready
}

// Target is a resolved server under test. Its fields beside View are
// resolved, not copied: they merge the unit's view, the query (a URL's
// --device, --dev-mode, --model) and the server's own answers (an "auto"
// device, the runtime, the model name). A unit's own settings are read
// from View.
type Target struct {
	// Unit names the folder its runs are filed under.
	Unit    string
	BaseURL string
	// Model is the name sent in requests; CatalogModel the catalog entry
	// that grades it.
	Model        string
	CatalogModel string
	Device       string
	Runtime      string
	Simulated    bool
	// MaxModelLen is the context length the server reports (0: unknown).
	MaxModelLen int
	// APIKey is the bearer token sent ("" for none); Header extra headers.
	APIKey string
	Header http.Header
	// Spec is the catalog entry of (CatalogModel, Device) in Catalog, nil
	// when there is none.
	Spec *catalog.Spec
	// Catalog is the catalog mode the spec is looked up in (prod or dev),
	// also recorded as the "catalog" condition.
	Catalog string
	// View is the unit the target was resolved from (the zero View for a
	// URL target): the unit's own settings a workflow follows, such as its
	// eval overrides (View.Evals), are read from it.
	View units.View
	// TraceCapture says whether sweeps warm the server up per (ISL, batch)
	// before measuring: a vllm unit's [vllm] trace_capture, or for a URL a
	// Tenstorrent hardware --device.
	TraceCapture bool
	// Conditions is what shapes the numbers, recorded with every result:
	// the server's own account (GET /version of a ttis server: runtime,
	// engine, time scale, model file and its hash) and the unit's device
	// and chips.
	Conditions map[string]string
}

// Server opens the protocol client for the target, keeping up to conns
// connections.
func (t *Target) Server(conns int) (*openai.Client, error) {
	return openai.New(openai.Config{BaseURL: t.BaseURL, APIKey: t.APIKey, Header: t.Header, MaxConns: conns})
}

// AuthHeader is the target's headers with its bearer, for clients that take
// headers.
func (t *Target) AuthHeader() http.Header {
	h := t.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if t.APIKey != "" && h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+t.APIKey)
	}
	return h
}

// Resolve finds the server of q and asks it what it serves. A unit whose
// model is a file (a cpu unit names a GGUF) is sent the name the server
// reports.
func Resolve(ctx context.Context, q Query) (*Target, error) {
	t := &Target{Header: q.Header.Clone(), APIKey: q.APIKey, Device: q.Device, Conditions: map[string]string{}}
	switch {
	case q.Unit != nil && q.URL != "":
		return nil, errors.New("give either a unit or a URL, not both")
	case q.Unit != nil:
		u := q.Unit
		base, err := u.BaseURL()
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", u.Name, err)
		}
		t.Unit, t.BaseURL, t.Runtime, t.View = u.Name, base, u.Runtime, *u
		t.View.Chips = slices.Clone(u.Chips)
		t.TraceCapture = u.TraceCapture != nil && *u.TraceCapture
		t.Catalog = u.Catalog
		if t.Device == "" {
			t.Device = u.Device
		}
		t.Simulated = u.Runtime == "sim"
		if !isModelFile(u.Model) {
			t.Model, t.CatalogModel = u.Model, u.Model
		}
		if t.APIKey == "" {
			tok, err := unitBearer(u, q)
			if err != nil {
				return nil, err
			}
			t.APIKey = tok
		}
	case q.URL != "":
		base, err := openai.NormalizeBaseURL(q.URL)
		if err != nil {
			return nil, err
		}
		t.BaseURL = base
		if d, err := catalog.Device(q.Device); err == nil && d.Hardware() {
			t.TraceCapture = true
		}
	default:
		return nil, errors.New("give a unit or a URL")
	}
	if q.Model != "" {
		t.Model = q.Model
	}
	if q.CatalogModel != "" {
		t.CatalogModel = q.CatalogModel
	}
	if q.Catalog != "" {
		t.Catalog = q.Catalog
	}
	mode, err := catalog.ParseMode(t.Catalog)
	if err != nil {
		return nil, err
	}
	t.Catalog = mode
	if q.Ready.Timeout > 0 {
		srv, err := t.Server(1)
		if err != nil {
			return nil, err
		}
		err = WaitReady(ctx, srv, q.Ready)
		srv.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := t.ask(ctx); err != nil {
		return nil, err
	}
	if t.Device == units.DeviceAuto {
		// The server resolved it from the host's boards and reports it.
		if d := t.Conditions["device"]; d != "" && d != units.DeviceAuto {
			t.Device = d
		}
	}
	if t.CatalogModel == "" {
		t.CatalogModel = t.Model
	}
	if t.Device != "" {
		if spec, err := catalog.LookupIn(t.Catalog, t.CatalogModel, t.Device); err == nil {
			t.Spec = spec
		}
	}
	if t.Unit == "" {
		t.Unit = q.Name
		if t.Unit == "" {
			t.Unit = urlUnitName(t.CatalogModel, t.Device)
		}
	}
	t.Conditions["runtime"] = t.Runtime
	t.Conditions["simulated"] = strconv.FormatBool(t.Simulated)
	// Targets and limits differ between catalogs: say which graded.
	t.Conditions["catalog"] = t.Catalog
	if t.Device != "" {
		t.Conditions["device"] = t.Device
	}
	if chips := t.View.Chips; len(chips) > 0 {
		t.Conditions["chips"] = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(chips)), ","), "[]")
	}
	return t, nil
}

// ask reads the server's model card (the model name when none was given,
// whether it is simulated, its context length) and, from a ttis server,
// its conditions (GET /version).
func (t *Target) ask(ctx context.Context) error {
	srv, err := t.Server(1)
	if err != nil {
		return err
	}
	defer srv.Close()
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cards, err := srv.Models(lctx)
	switch {
	case err != nil && t.Model == "":
		return fmt.Errorf("no model given and %w", err)
	case err == nil:
		card, ok := openai.Pick(cards, t.Model)
		if !ok && t.Model == "" {
			return fmt.Errorf("no model given and the server at %s lists none", t.BaseURL)
		}
		if ok {
			t.Model = card.ID
			t.Simulated = t.Simulated || card.Simulated
			t.MaxModelLen = card.MaxModelLen
			if t.Runtime == "" {
				t.Runtime = card.Runtime
			}
		}
	}
	raw, err := srv.Get(lctx, "/version")
	if err != nil {
		return nil // not a ttis server, or an old one: no conditions to add
	}
	var v struct {
		Version    string            `json:"version"`
		Server     string            `json:"server"`
		Runtime    string            `json:"runtime"`
		Engine     string            `json:"engine"`
		Simulated  *bool             `json:"simulated"`
		Conditions map[string]string `json:"conditions"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Server != "ttis" {
		return nil
	}
	for k, val := range v.Conditions {
		t.Conditions[k] = val
	}
	t.Conditions["server_version"] = v.Version
	if v.Engine != "" {
		t.Conditions["engine"] = v.Engine
	}
	if v.Runtime != "" {
		t.Runtime = v.Runtime
	}
	if v.Simulated != nil {
		t.Simulated = t.Simulated || *v.Simulated
	}
	return nil
}

// unitBearer is the bearer for a unit with auth: the API key itself, or a
// JWT minted from the unit's secret. Reading the secret needs the
// permissions of the daemon's user.
func unitBearer(u *units.View, q Query) (string, error) {
	switch u.AuthMode {
	case "", auth.ModeNone:
		return "", nil
	case auth.ModeAPIKey, auth.ModeJWT:
	default:
		return "", fmt.Errorf("unit %s: unknown auth mode %q", u.Name, u.AuthMode)
	}
	secret, err := auth.ReadSecret(u.AuthSecretFile)
	if err != nil {
		return "", fmt.Errorf("unit %s uses %s auth: %w (or pass --api-key)", u.Name, u.AuthMode, err)
	}
	if u.AuthMode == auth.ModeAPIKey {
		return strings.TrimSpace(string(secret)), nil
	}
	now := time.Now
	if q.Now != nil {
		now = q.Now
	}
	ttl := q.TokenTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	// The server refuses a token that lives longer than the unit allows:
	// a run longer than that must raise the unit's max_token_lifetime.
	if maxLife := u.MaxTokenLifetime(); maxLife > 0 && ttl > maxLife {
		ttl = maxLife
	}
	issuer, purpose := q.Issuer, q.Purpose
	if issuer == "" {
		issuer = "ttisctl"
	}
	if purpose == "" {
		purpose = "workflow"
	}
	tok, err := auth.Mint(secret, issuer, purpose, ttl, now())
	if err != nil {
		return "", fmt.Errorf("unit %s: mint token: %w", u.Name, err)
	}
	return tok, nil
}

// isModelFile reports whether a unit's model names a file (a cpu unit's
// GGUF) rather than a catalog model.
func isModelFile(model string) bool { return strings.HasSuffix(strings.ToLower(model), ".gguf") }

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// urlUnitName files a URL target's runs: "url-<model>-<device>".
func urlUnitName(model, device string) string {
	name := "url-" + filepath.Base(model)
	if device != "" {
		name += "-" + device
	}
	return strings.Trim(unsafeNameChars.ReplaceAllString(name, "-"), "-.")
}
