package kernels

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPoolRunCoversRangeOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		p := NewPool(threads)
		if p.Threads() != threads {
			t.Errorf("Threads() = %d, want %d", p.Threads(), threads)
		}
		for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
			hits := make([]int32, n)
			for rep := 0; rep < 3; rep++ {
				p.Run(n, func(lo, hi int) {
					if lo >= hi || lo < 0 || hi > n {
						t.Errorf("bad chunk [%d,%d) of %d", lo, hi, n)
						return
					}
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
			}
			for i, h := range hits {
				if h != 3 {
					t.Fatalf("threads %d n %d: index %d ran %d times in 3 runs", threads, n, i, h)
				}
			}
		}
		p.Close()
		p.Close() // idempotent
	}
}

func TestPoolDefaultThreads(t *testing.T) {
	p := NewPool(0)
	defer p.Close()
	if p.Threads() < 1 {
		t.Fatalf("Threads() = %d", p.Threads())
	}
}

// TestPoolWakesParkedWorkers lets the workers park, then checks that jobs
// still complete and that parked workers wake up to take part.
func TestPoolWakesParkedWorkers(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	for rep := 0; rep < 3; rep++ {
		time.Sleep(20 * time.Millisecond) // long enough for the spin phase to end
		var sum atomic.Int64
		var mu sync.Mutex
		callers := map[int64]bool{}
		p.Run(100, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sum.Add(int64(i))
			}
			mu.Lock()
			callers[goid()] = true
			mu.Unlock()
			time.Sleep(time.Millisecond) // give the woken workers a chance to claim chunks
		})
		if sum.Load() != 4950 {
			t.Fatalf("sum = %d, want 4950", sum.Load())
		}
		if len(callers) < 2 {
			t.Fatalf("chunks ran on %d goroutines, want the workers to join", len(callers))
		}
	}
}

func TestPoolConcurrentCallers(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var wg sync.WaitGroup
	var total atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				p.Run(10, func(lo, hi int) { total.Add(int64(hi - lo)) })
			}
		}()
	}
	wg.Wait()
	if total.Load() != 4*50*10 {
		t.Fatalf("total = %d, want %d", total.Load(), 4*50*10)
	}
}

// goid returns the current goroutine's id (from its stack header), to tell
// the threads of a pool apart in tests.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}
