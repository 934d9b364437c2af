package model

import (
	"testing"

	"github.com/ttis-dev/ttis/units"
)

// TestKVTypeNamesMatchUnits checks that every cache type a unit file may
// name opens in the engine and prints back as the same name, that the
// engine's types print as names units accepts, and that an unset type is
// the units default.
func TestKVTypeNamesMatchUnits(t *testing.T) {
	seen := map[KVType]bool{}
	for _, name := range units.KVCacheTypes() {
		kv, err := ParseKVType(name)
		if err != nil {
			t.Fatalf("units accepts kv_cache_type %q, the engine does not: %v", name, err)
		}
		if kv.String() != name {
			t.Errorf("ParseKVType(%q).String() = %q", name, kv.String())
		}
		if seen[kv] {
			t.Errorf("%q parses to %v, as another name does", name, kv)
		}
		seen[kv] = true
	}
	for _, kv := range []KVType{KVF16, KVF32} {
		if !units.IsKVCacheType(kv.String()) {
			t.Errorf("engine type %v prints as %q, which units does not accept", kv, kv.String())
		}
	}
	if kv, err := ParseKVType(""); err != nil || kv.String() != units.DefaultKVCacheType {
		t.Errorf("ParseKVType(\"\") = %v, %v; want the units default %q", kv, err, units.DefaultKVCacheType)
	}
}

// FuzzParseKVType checks that ParseKVType accepts exactly "" and the names
// units accepts, and that what it accepts prints back as a name it accepts.
func FuzzParseKVType(f *testing.F) {
	for _, s := range []string{"", "f16", "f32", "F16", "q8_0", "f16 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := ParseKVType(s)
		valid := s == "" || units.IsKVCacheType(s)
		if (err == nil) != valid {
			t.Fatalf("ParseKVType(%q) error %v", s, err)
		}
		if err != nil {
			return
		}
		back, err := ParseKVType(kv.String())
		if err != nil || back != kv {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, kv, kv.String(), back, err)
		}
		if kv.ElemBytes() != map[KVType]int64{KVF16: 2, KVF32: 4}[kv] {
			t.Fatalf("%v: %d bytes per element", kv, kv.ElemBytes())
		}
	})
}
