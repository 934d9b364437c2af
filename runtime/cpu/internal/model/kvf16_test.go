package model

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// TestF16CacheNearF32 checks that an F16 cache gives the F32 cache's
// greedy tokens and logits within half-precision rounding, for one batch
// and for prompts fed in chunks.
func TestF16CacheNearF32(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, m := openModel(t, path)
			pool := kernels.NewPool(2)
			defer pool.Close()
			prompt := []int{1, 403, 407, 261, 378, 290, 300, 311, 270}
			for _, chunk := range []int{1, 3, len(prompt)} {
				refIDs, ref := greedy(t, NewRunner(m, pool, 16), m.NewKVCache(64, KVF32), prompt, 8, chunk)
				ids, got := greedy(t, NewRunner(m, pool, 16), m.NewKVCache(64, KVF16), prompt, 8, chunk)
				if d := maxAbsDiff(ref, got); d > 2e-2 {
					t.Errorf("chunk %d: F16 cache logits differ from F32 by %g", chunk, d)
				}
				if !slices.Equal(ids, refIDs) {
					t.Errorf("chunk %d: F16 cache greedy %v, F32 %v", chunk, ids, refIDs)
				}
			}
		})
	}
}

// TestCacheGrowthKeepsPositions: a cache that grows (into a new mapping,
// the old one released) still holds every position written before, in
// both element types.
func TestCacheGrowthKeepsPositions(t *testing.T) {
	m := &Model{Cfg: Config{Layers: 2, KVHeads: 2, HeadDim: 8}}
	for _, kv := range []KVType{KVF16, KVF32} {
		c := m.NewKVCache(1000, kv)
		k, v := make([]float32, 16), make([]float32, 16)
		value := func(l, pos, i int) float32 { return float32((l*131 + pos*17 + i*5) % 2048) } // exact in F16
		for pos := range 300 {
			c.Reserve(pos + 1)
			for l := range 2 {
				for i := range k {
					k[i], v[i] = value(l, pos, i), -value(l, pos, i)
				}
				c.store(l, pos, k, v)
			}
			c.n = pos + 1
		}
		if c.capPos < 300 {
			t.Fatalf("%s: capacity %d after 300 positions", kv, c.capPos)
		}
		for l := range 2 {
			for pos := range 300 {
				for h := range 2 {
					for d := range 8 {
						i := h*8 + d
						var gk, gv float32
						if kv == KVF16 {
							keys, valsT := c.head16(l, h, 300)
							gk, gv = kernels.F16ToF32(keys[pos*8+d]), kernels.F16ToF32(valsT[d*c.capPos+pos])
						} else {
							keys, vals := c.head(l, h, 300)
							gk, gv = keys[pos*8+d], vals[pos*8+d]
						}
						if want := value(l, pos, i); gk != want || gv != -want {
							t.Fatalf("%s layer %d position %d element %d: key %v value %v, want %v and %v", kv, l, pos, i, gk, gv, want, -want)
						}
					}
				}
			}
		}
	}
}

// TestCacheMemoryReleased: the mappings of caches nobody holds any more
// are released (not left for the process's lifetime). 64 caches of 8 MiB
// are made and dropped; the process's mapped size must not keep them.
func TestCacheMemoryReleased(t *testing.T) {
	vmSize := func() int64 {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Skip("no /proc/self/status")
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
				kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return kib << 10
			}
		}
		t.Skip("no VmSize")
		return 0
	}
	m := &Model{Cfg: Config{Layers: 2, KVHeads: 2, HeadDim: 64}}
	before := vmSize()
	for range 64 {
		c := m.NewKVCache(8192, KVF16) // 2 layers x K,V x 2 heads x 8192 x 64 x 2 bytes = 8 MiB
		c.Reserve(8192)
	}
	// Cleanups run after a collection, on their own goroutine.
	const slack = 128 << 20
	for i := 0; i < 100 && vmSize() > before+slack; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if grew := vmSize() - before; grew > slack {
		t.Fatalf("mapped size grew by %d MiB after 64 dropped 8 MiB caches: their memory was not released", grew>>20)
	}
}
