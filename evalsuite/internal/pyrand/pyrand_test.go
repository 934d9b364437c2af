package pyrand

import (
	"fmt"
	"testing"
)

// The expectations below were recorded from CPython 3.11:
//
//	r = random.Random(seed); [r.getrandbits(32) for _ in range(3)]
//	r = random.Random(seed); [(x := [0,1,2,3], r.shuffle(x), x)[2] for _ in range(5)]
func TestMatchesCPython(t *testing.T) {
	cases := []struct {
		seed     int64
		bits     [3]uint32
		shuffles string
	}{
		{0, [3]uint32{3626764237, 1654615998, 3255389356}, "[[2 0 1 3] [0 1 3 2] [0 2 1 3] [1 0 3 2] [2 0 3 1]]"},
		{42, [3]uint32{2746317213, 478163327, 107420369}, "[[2 1 3 0] [3 2 0 1] [1 3 2 0] [1 2 0 3] [1 2 3 0]]"},
		{1234, [3]uint32{4150886329, 3342196574, 1892932127}, "[[1 2 0 3] [1 3 2 0] [2 1 3 0] [3 2 0 1] [3 2 1 0]]"},
		{-7, [3]uint32{1390851128, 4071050724, 647892279}, "[[3 1 0 2] [1 2 3 0] [1 0 3 2] [3 2 0 1] [2 0 1 3]]"},
		{1<<40 + 5, [3]uint32{2166296868, 2220160828, 1153647273}, "[[1 0 3 2] [1 2 3 0] [3 2 0 1] [0 3 2 1] [1 3 2 0]]"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.seed), func(t *testing.T) {
			r := New(c.seed)
			for i, want := range c.bits {
				if got := r.GetRandBits(32); got != want {
					t.Errorf("getrandbits #%d = %d, want %d", i, got, want)
				}
			}
			r = New(c.seed)
			var all [][]int
			for range 5 {
				x := []int{0, 1, 2, 3}
				r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
				all = append(all, x)
			}
			if got := fmt.Sprint(all); got != c.shuffles {
				t.Errorf("shuffles %s, want %s", got, c.shuffles)
			}
		})
	}
}

// TestStateRegeneration crosses the 624-word boundary where the state is
// regenerated: the 700th 32-bit output of Random(42) in CPython.
func TestStateRegeneration(t *testing.T) {
	r := New(42)
	var v uint32
	for range 700 {
		v = r.GetRandBits(32)
	}
	if v != 2918508077 {
		t.Errorf("700th output %d, want 2918508077", v)
	}
}

// TestBelowAndSmallBits checks rejection sampling and short getrandbits:
// r = random.Random(3); [r._randbelow(10) for _ in range(8)],
// [r.getrandbits(5) for _ in range(3)].
func TestBelowAndSmallBits(t *testing.T) {
	r := New(3)
	want := []uint32{3, 9, 8, 2, 5, 9, 7, 9}
	for i, w := range want {
		if got := r.Below(10); got != w {
			t.Errorf("_randbelow(10) #%d = %d, want %d", i, got, w)
		}
	}
	for i, w := range []uint32{2, 19, 0} {
		if got := r.GetRandBits(5); got != w {
			t.Errorf("getrandbits(5) #%d = %d, want %d", i, got, w)
		}
	}
	if r.Below(0) != 0 || r.GetRandBits(0) != 0 {
		t.Error("empty ranges must yield 0")
	}
}

// TestSampleMatchesCPython: r = random.Random(seed);
// [r.sample(list(range(n)), k) for _ in range(3)] in CPython 3.11, across
// the pool/rejection switch (n = 21/22 for k = 5, 85/86 for k = 6).
func TestSampleMatchesCPython(t *testing.T) {
	cases := []struct {
		seed int64
		n, k int
		want string
	}{
		{42, 198, 6, "[[163 28 6 189 70 62] [57 35 188 26 173 189] [139 22 151 108 8 7]]"},
		{42, 5, 3, "[[0 4 2] [2 1 0] [1 0 2]]"},
		{1234, 30, 6, "[[24 14 3 0 2 18] [1 21 22 2 3 24] [11 7 0 27 25 26]]"},
		{7, 85, 6, "[[41 19 50 6 9 68] [12 46 74 7 64 27] [4 11 55 53 8 30]]"},
		{7, 86, 6, "[[41 19 50 83 6 9] [68 12 46 74 7 64] [27 4 11 55 53 8]]"},
		{42, 198, 4, "[[163 28 6 189] [70 62 57 35] [188 26 173 189]]"},
		{0, 21, 5, "[[12 13 1 8 16] [15 12 9 20 11] [18 6 16 4 9]]"},
		{0, 22, 5, "[[12 13 1 8 16] [15 12 9 11 18] [6 16 4 9 3]]"},
	}
	for _, c := range cases {
		r := New(c.seed)
		var got [][]int
		for range 3 {
			got = append(got, r.Sample(c.n, c.k))
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("seed %d sample(%d, %d): %s, want %s", c.seed, c.n, c.k, s, c.want)
		}
	}
}
