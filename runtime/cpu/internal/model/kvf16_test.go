package model

import (
	"path/filepath"
	"slices"
	"testing"

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
