package serve

import (
	"testing"

	"github.com/ttis-dev/ttis/units"
)

// TestConditionsCPUKVCacheType checks that a cpu unit's conditions name
// its key/value cache type, the default when the unit sets none.
func TestConditionsCPUKVCacheType(t *testing.T) {
	for set, want := range map[string]string{"": "f16", "f16": "f16", "f32": "f32"} {
		u := &units.Unit{Runtime: "cpu", Model: "/nonexistent/m.gguf", CPU: units.CPU{Threads: 1, KVCacheType: set}}
		m := ConditionsOf(u).Map()
		if m["kv_cache_type"] != want || m["threads"] != "1" {
			t.Errorf("kv_cache_type %q: conditions %v, want kv_cache_type %s", set, m, want)
		}
	}
}
