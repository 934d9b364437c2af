package pyrand

import (
	"slices"
	"testing"
)

// np.random.seed(42) is documented everywhere by its first values:
// np.random.rand() == 0.3745401188473625 and
// np.random.randint(0, 10, size=5) == [6, 3, 7, 4, 6] (each from a fresh
// seed).
func TestNumpyLegacyMatchesNumpy(t *testing.T) {
	if v := NewNumpyLegacy(42).Random(); v != 0.3745401188473625 {
		t.Errorf("rand() = %v", v)
	}
	r := NewNumpyLegacy(42)
	var got []int
	for range 5 {
		got = append(got, r.NumpyRandInt(0, 10))
	}
	if !slices.Equal(got, []int{6, 3, 7, 4, 6}) {
		t.Errorf("randint(0, 10) x5 = %v", got)
	}
}

// random.Random(42): random() == 0.6394267984578837 and
// choices(range(26), k=5) afterwards == [0, 7, 5, 19, 17] (CPython 3.11).
func TestRandomAndChoicesMatchCPython(t *testing.T) {
	r := New(42)
	if v := r.Random(); v != 0.6394267984578837 {
		t.Errorf("random() = %v", v)
	}
	if c := r.Choices(26, 5); !slices.Equal(c, []int{0, 7, 5, 19, 17}) {
		t.Errorf("choices = %v", c)
	}
}
