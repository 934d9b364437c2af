package pyrand

import (
	"slices"
	"testing"
)

// The values CPython 3.11 prints for
// r = random.Random(42); r.getrandbits(128), r.randint(1000000, 9999999),
// r.sample(range(100), 3), r.sample(range(1), 1).
func TestWideBitsAndRandIntMatchCPython(t *testing.T) {
	r := New(42)
	hi, lo := r.GetRandBits128()
	// 252336560693540533935881068298825202077
	if hi != 0xbdd640fb06671ad1 || lo != 0x1c80317fa3b1799d {
		t.Errorf("getrandbits(128) = %#x %#x", hi, lo)
	}
	if v := r.RandInt(1000000, 9999999); v != 5614226 {
		t.Errorf("randint = %d, want 5614226", v)
	}
	if s := r.Sample(100, 3); !slices.Equal(s, []int{31, 28, 17}) {
		t.Errorf("sample = %v", s)
	}
	if s := r.Sample(1, 1); !slices.Equal(s, []int{0}) {
		t.Errorf("sample of one = %v", s)
	}
}
