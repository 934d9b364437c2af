package units

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestView derives the view from a parsed unit: the secret file as Parse
// resolved it, the evals, the trace-capture default of a vllm unit, the
// dev catalog.
func TestView(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `description = "test"
model = "Llama-3.1-8B-Instruct"
device = "n300"
runtime = "sim"
catalog = "dev"
listen = "0.0.0.0:8101"

[auth]
mode = "jwt"
secret_file = "secret"
max_token_lifetime = "2h"

[evals]
tasks = ["gsm8k"]
datasets = { gsm8k = "data/gsm8k.jsonl" }
`
	path := filepath.Join(dir, "llama.toml")
	u, err := Parse("llama", path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	v := u.View()
	if v.Name != "llama" || v.Path != path || v.Description != "test" || v.Model != "Llama-3.1-8B-Instruct" || v.Device != "n300" ||
		v.Runtime != "sim" || v.Listen != "0.0.0.0:8101" || v.Disabled || v.Catalog != "dev" || v.TraceCapture != nil {
		t.Errorf("view %+v", v)
	}
	if v.MaxConcurrency != u.Limits.MaxConcurrency || v.MaxConcurrency == 0 {
		t.Errorf("max_concurrency %d, unit's %d", v.MaxConcurrency, u.Limits.MaxConcurrency)
	}
	if v.AuthMode != AuthJWT || v.AuthSecretFile != filepath.Join(dir, "secret") || v.MaxTokenLifetime().Hours() != 2 {
		t.Errorf("auth: %q %q %s", v.AuthMode, v.AuthSecretFile, v.MaxTokenLifetime())
	}
	if got := v.Evals.Datasets["gsm8k"]; got != filepath.Join(dir, "data", "gsm8k.jsonl") || len(v.Evals.Tasks) != 1 {
		t.Errorf("evals %+v", v.Evals)
	}
	// The view owns its slices and maps: a workflow that edits them does
	// not edit the daemon's unit.
	v.Evals.Datasets["gsm8k"] = "x"
	if u.Evals.Datasets["gsm8k"] == "x" {
		t.Error("view shares the unit's evals")
	}
	if base, err := v.BaseURL(); err != nil || base != "http://127.0.0.1:8101" {
		t.Errorf("BaseURL = %q, %v", base, err)
	}

	u.Runtime, u.Catalog = RuntimeVllm, "prod"
	if v := u.View(); v.TraceCapture == nil || !*v.TraceCapture || v.Catalog != "" {
		t.Errorf("vllm prod unit: trace capture %v catalog %q", v.TraceCapture, v.Catalog)
	}
}

// TestViewJSON pins the view's JSON names, which are the control API's:
// ttisctl -o json consumers read them.
func TestViewJSON(t *testing.T) {
	on := true
	v := View{Name: "a", Path: "/u/a.toml", Description: "d", Model: "m", Device: "n150", Chips: []int{0}, Runtime: "vllm",
		Listen: "127.0.0.1:1", Disabled: true, AuthMode: "jwt", AuthSecretFile: "/s", AuthMaxTokenLifetimeSeconds: 60,
		Evals: Evals{API: "chat"}, Tests: Tests{Suite: "text"}, MaxConcurrency: 4, MaxAudioSeconds: 30, TraceCapture: &on, Catalog: "dev"}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"a","path":"/u/a.toml","description":"d","model":"m","device":"n150","chips":[0],"runtime":"vllm",` +
		`"listen":"127.0.0.1:1","disabled":true,"auth_mode":"jwt","auth_secret_file":"/s","auth_max_token_lifetime_seconds":60,` +
		`"evals":{"api":"chat"},"tests":{"suite":"text"},"max_concurrency":4,"max_audio_seconds":30,"trace_capture":true,"catalog":"dev"}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	// A unit without a valid version is only its name and path.
	if b, _ := json.Marshal(View{Name: "a", Path: "/u/a.toml"}); string(b) != `{"name":"a","path":"/u/a.toml"}` {
		t.Errorf("empty view JSON %s", b)
	}
	var back View
	if err := json.Unmarshal([]byte(want), &back); err != nil || !reflect.DeepEqual(back, v) {
		t.Errorf("round trip %+v %v", back, err)
	}
}

// TestOverridesIsZero sets each field of Evals and Tests in turn: IsZero
// must see every one, or the control API would drop a unit's only
// override, and clone must copy it.
func TestOverridesIsZero(t *testing.T) {
	checkOverride(t, Evals.clone)
	checkOverride(t, Tests.clone)
}

func checkOverride[T interface{ IsZero() bool }](t *testing.T, clone func(T) T) {
	t.Helper()
	var zero T
	typ := reflect.TypeFor[T]()
	if !zero.IsZero() {
		t.Fatalf("zero %s is not zero", typ.Name())
	}
	for i := range typ.NumField() {
		var v T
		if !setNonZero(reflect.ValueOf(&v).Elem().Field(i)) {
			t.Fatalf("%s.%s: kind %s not covered by this test", typ.Name(), typ.Field(i).Name, typ.Field(i).Type.Kind())
		}
		if v.IsZero() {
			t.Errorf("%s.IsZero ignores %s", typ.Name(), typ.Field(i).Name)
		}
		if c := clone(v); !reflect.DeepEqual(c, v) {
			t.Errorf("%s.clone drops %s: %+v", typ.Name(), typ.Field(i).Name, c)
		}
	}
}

// setNonZero gives f a value other than its zero, reporting false for a
// kind it does not know.
func setNonZero(f reflect.Value) bool {
	switch f.Kind() {
	case reflect.String:
		f.SetString("x")
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int64:
		f.SetInt(1)
	case reflect.Float64:
		f.SetFloat(1)
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	case reflect.Map:
		f.Set(reflect.MakeMap(f.Type()))
		f.SetMapIndex(reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem())
	case reflect.Struct:
		return f.NumField() > 0 && setNonZero(f.Field(0)) // Duration
	default:
		return false
	}
	return true
}
