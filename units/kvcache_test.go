package units

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKVCacheTypes checks the list of cache type names: the default first,
// no name twice, each one a unit file accepts, and the text that lists them.
func TestKVCacheTypes(t *testing.T) {
	names := KVCacheTypes()
	if len(names) == 0 || names[0] != DefaultKVCacheType {
		t.Fatalf("KVCacheTypes() = %q, want the default %q first", names, DefaultKVCacheType)
	}
	names[0] = "changed"
	if KVCacheTypes()[0] != DefaultKVCacheType {
		t.Fatal("KVCacheTypes returns a shared slice: a caller changed the list")
	}
	data, err := os.ReadFile("testdata/good/cpu-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs("testdata/good/cpu-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, name := range KVCacheTypes() {
		if name == "" || seen[name] || !IsKVCacheType(name) {
			t.Errorf("kv cache type %q: empty, listed twice or not accepted by IsKVCacheType", name)
		}
		seen[name] = true
		unit := strings.Replace(string(data), `kv_cache_type = "f32"`, "kv_cache_type = "+strconv.Quote(name), 1)
		u, err := Parse("cpu-tiny", path, []byte(unit))
		if err != nil {
			t.Errorf("kv_cache_type %q: %v", name, err)
		} else if u.CPU.KVType() != name {
			t.Errorf("kv_cache_type %q read as %q", name, u.CPU.KVType())
		}
	}
	if IsKVCacheType("") || IsKVCacheType("F16") {
		t.Error(`IsKVCacheType accepts "" or "F16"`)
	}
	if got := KVCacheTypeChoices(nil); got != "f16 or f32" {
		t.Errorf("KVCacheTypeChoices(nil) = %q", got)
	}
	if got := KVCacheTypeChoices(quoteMarkingDefaultKV); got != `"f16" (the default) or "f32"` {
		t.Errorf("KVCacheTypeChoices(quoteMarkingDefaultKV) = %q", got)
	}
}
