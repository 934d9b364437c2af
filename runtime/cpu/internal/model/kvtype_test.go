package model

import "testing"

// FuzzParseKVType checks that ParseKVType accepts exactly "", "f16" and
// "f32", and that what it accepts prints back as a name it accepts.
func FuzzParseKVType(f *testing.F) {
	for _, s := range []string{"", "f16", "f32", "F16", "q8_0", "f16 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := ParseKVType(s)
		valid := s == "" || s == "f16" || s == "f32"
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
