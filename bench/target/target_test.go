package target

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/units"
)

// ttisServer answers /v1/models and /version as a ttis sim unit does,
// refusing requests without the expected bearer.
func ttisServer(t *testing.T, bearer func(string) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer != nil && !bearer(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
			http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"served","max_model_len":8192,"runtime":"sim","simulated":true}]}`)
		case "/version":
			_, _ = io.WriteString(w, `{"server":"ttis","version":"1.2.3","runtime":"sim","engine":"sim-1","simulated":true,"conditions":{"time_scale":"0.05"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResolveUnit(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The unit allows tokens of at most 30 minutes: the day-long token a
	// schedule asks for is cut to that, or the server would refuse it.
	maxLife := units.Duration{Duration: 30 * time.Minute}
	v, err := auth.New(auth.ModeJWT, secret, auth.Policy{MaxLifetime: maxLife.Duration})
	if err != nil {
		t.Fatal(err)
	}
	srv := ttisServer(t, func(tok string) bool { _, err := v.Verify([]byte("Bearer " + tok)); return err == nil })
	listen := strings.TrimPrefix(srv.URL, "http://")
	u := (&units.Unit{Name: "llama", Model: "Llama-3.1-8B-Instruct", Device: "n150", Chips: []int{0, 1}, Runtime: "sim",
		Listen: listen, Auth: units.Auth{Mode: "jwt", SecretFile: secret, MaxTokenLifetime: maxLife},
		Evals: units.Evals{Tasks: []string{"gsm8k"}}}).View()
	got, err := Resolve(context.Background(), Query{Unit: &u, Purpose: "schedule", TokenTTL: 24 * time.Hour, Issuer: "ttisd"})
	if err != nil {
		t.Fatal(err)
	}
	// A catalog unit keeps its catalog model as the name it sends; the
	// server's card adds the context length and the simulated flag, its
	// /version the conditions.
	if got.Unit != "llama" || got.Model != "Llama-3.1-8B-Instruct" || got.CatalogModel != "Llama-3.1-8B-Instruct" || got.Spec == nil ||
		!got.Simulated || got.Runtime != "sim" || strings.Count(got.APIKey, ".") != 2 || len(got.View.Evals.Tasks) != 1 {
		t.Errorf("target %+v", got)
	}
	want := map[string]string{"runtime": "sim", "simulated": "true", "device": "n150", "chips": "0,1", "time_scale": "0.05", "server_version": "1.2.3", "engine": "sim-1"}
	for k, v := range want {
		if got.Conditions[k] != v {
			t.Errorf("condition %s = %q, want %q (all: %v)", k, got.Conditions[k], v, got.Conditions)
		}
	}
	// A cpu unit names a model file: the server's name is sent.
	f := (&units.Unit{Name: "tiny", Model: "/models/tiny.gguf", Device: "cpu", Runtime: "cpu", Listen: "0.0.0.0" + listen[strings.LastIndex(listen, ":"):],
		Auth: units.Auth{Mode: "jwt", SecretFile: secret, MaxTokenLifetime: maxLife}}).View()
	got, err = Resolve(context.Background(), Query{Unit: &f})
	if err != nil || got.Model != "served" || got.Spec != nil || got.BaseURL != srv.URL {
		t.Errorf("cpu unit: %+v %v", got, err)
	}
}

func TestResolveURLAndErrors(t *testing.T) {
	srv := ttisServer(t, nil)
	got, err := Resolve(context.Background(), Query{URL: srv.URL + "/v1", Device: "n150", CatalogModel: "Llama-3.1-8B-Instruct"})
	if err != nil || got.Model != "served" || got.Unit != "url-Llama-3.1-8B-Instruct-n150" || got.Spec == nil || got.MaxModelLen != 8192 {
		t.Errorf("url: %+v %v", got, err)
	}
	dir := t.TempDir()
	for name, q := range map[string]Query{
		"neither":        {},
		"both":           {URL: srv.URL, Unit: &units.View{Name: "x", Listen: "127.0.0.1:1"}},
		"bad listen":     {Unit: &units.View{Name: "d", Model: "M", Listen: "nowhere"}},
		"bad auth mode":  {Unit: &units.View{Name: "e", Model: "M", Listen: "127.0.0.1:9", AuthMode: "magic"}},
		"missing secret": {Unit: &units.View{Name: "c", Model: "M", Listen: "127.0.0.1:9", AuthMode: "jwt", AuthSecretFile: filepath.Join(dir, "none")}},
		"no model known": {URL: "http://127.0.0.1:9"},
	} {
		if _, err := Resolve(context.Background(), q); err == nil {
			t.Errorf("%s: resolved", name)
		}
	}
	// A unit whose server is down still resolves from its file (its model
	// is known), so a schedule can record the failure of the run itself.
	if got, err := Resolve(context.Background(), Query{Unit: &units.View{Name: "down", Model: "M", Listen: "127.0.0.1:9"}}); err != nil || got.Model != "M" {
		t.Errorf("down unit: %+v %v", got, err)
	}
}

// TestResolveTraceCapture: a vllm unit's trace_capture (on by default)
// reaches the target; other runtimes never warm up.
func TestResolveTraceCapture(t *testing.T) {
	srv := ttisServer(t, nil)
	off := false
	for _, tc := range []struct {
		runtime string
		setting *bool
		want    bool
	}{{"vllm", nil, true}, {"vllm", &off, false}, {"sim", nil, false}, {"cpu", nil, false}} {
		u := &units.Unit{Name: "u", Model: "M", Runtime: tc.runtime, Listen: strings.TrimPrefix(srv.URL, "http://")}
		u.Vllm.TraceCapture = tc.setting
		v := u.View()
		got, err := Resolve(context.Background(), Query{Unit: &v})
		if err != nil || got.TraceCapture != tc.want {
			t.Errorf("runtime %s trace_capture %v: TraceCapture = %v, %v", tc.runtime, tc.setting, got.TraceCapture, err)
		}
	}
}

// TestResolveAutoDevice takes an auto unit's device from the server, which
// resolved it from the host's boards and reports it in /version.
func TestResolveAutoDevice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"Llama-3.1-8B-Instruct","max_model_len":8192,"runtime":"vllm"}]}`)
		case "/version":
			_, _ = io.WriteString(w, `{"server":"ttis","version":"1","runtime":"vllm","engine":"vllm","conditions":{"device":"n300"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	u := (&units.Unit{Name: "auto", Model: "Llama-3.1-8B-Instruct", Device: units.DeviceAuto, Chips: []int{0, 1}, Runtime: "vllm",
		Listen: strings.TrimPrefix(srv.URL, "http://"), Auth: units.Auth{Mode: "none"}}).View()
	got, err := Resolve(context.Background(), Query{Unit: &u})
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != "n300" || got.Spec == nil || got.Spec.Device != "n300" || !got.TraceCapture {
		t.Errorf("auto unit target: device %q spec %v trace capture %v", got.Device, got.Spec, got.TraceCapture)
	}
}

// TestResolveDevCatalog: a dev unit's spec (limits, targets, status) is the
// dev catalog's, and the catalog is a recorded condition; a prod unit and
// a URL record prod, and a URL may ask for dev.
func TestResolveDevCatalog(t *testing.T) {
	srv := ttisServer(t, nil)
	listen := strings.TrimPrefix(srv.URL, "http://")
	// Qwen3-8B on n150: 32768 tokens of context in the dev catalog, 40960
	// in prod (tt-inference-server 11ac526e0).
	dev := (&units.Unit{Name: "q", Model: "Qwen3-8B", Device: "n150", Runtime: "sim", Listen: listen, Catalog: "dev",
		Auth: units.Auth{Mode: "none"}}).View()
	got, err := Resolve(context.Background(), Query{Unit: &dev})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec == nil || got.Spec.CatalogMode() != "dev" || got.Spec.MaxContext != 32768 || got.Catalog != "dev" || got.Conditions["catalog"] != "dev" {
		t.Errorf("dev unit: spec %+v catalog %q conditions %v", got.Spec, got.Catalog, got.Conditions)
	}
	prod := dev
	prod.Catalog = ""
	got, err = Resolve(context.Background(), Query{Unit: &prod})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec == nil || got.Spec.CatalogMode() != "prod" || got.Spec.MaxContext != 40960 || got.Conditions["catalog"] != "prod" {
		t.Errorf("prod unit: spec %+v conditions %v", got.Spec, got.Conditions)
	}
	got, err = Resolve(context.Background(), Query{URL: srv.URL, Device: "n150", CatalogModel: "Qwen3-8B", Catalog: "dev"})
	if err != nil || got.Spec == nil || got.Spec.CatalogMode() != "dev" || got.Conditions["catalog"] != "dev" {
		t.Errorf("dev URL: %+v %v", got, err)
	}
	if _, err := Resolve(context.Background(), Query{URL: srv.URL, Catalog: "beta"}); err == nil || !strings.Contains(err.Error(), `unknown catalog "beta"`) {
		t.Errorf("bad catalog: %v", err)
	}
}
