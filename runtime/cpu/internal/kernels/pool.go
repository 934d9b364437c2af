package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs data-parallel work on a fixed set of persistent goroutines: the
// calling goroutine plus threads-1 workers. A decode step issues dozens of
// matrix products a millisecond, so dispatch must cost far less than starting
// goroutines: idle workers spin briefly on a generation counter (catching the
// next product of the same step) and then park on a channel.
//
// A Pool runs one call at a time; concurrent calls from several goroutines
// are serialized. Close it to stop the workers.
type Pool struct {
	threads int
	mu      sync.Mutex // serializes Run and MatMul; guards jobs, flip and mm

	gen  atomic.Uint32 // bumped once per dispatched job
	quit atomic.Bool
	cur  atomic.Pointer[job]
	// Jobs alternate between two slots: a worker that wakes late may still
	// hold the previous job, which must stay intact until it lets go.
	jobs [2]job
	flip int

	workers []*worker
	done    sync.WaitGroup
	closed  bool

	mm       matmulJob
	matmulFn func(lo, hi int) // mm.run, bound once so MatMul does not allocate
}

// job is one dispatched Run. The caller waits for every chunk to be done,
// not for every worker to check in, so a worker that the OS has descheduled
// (the machine may be shared) delays nobody unless it holds a chunk.
type job struct {
	fn       func(lo, hi int)
	n, chunk int
	chunks   int64
	next     atomic.Int64 // next chunk to claim
	finished atomic.Int64 // chunks done
	users    atomic.Int32 // workers that may read fn, n and chunk
	_        [40]byte
}

type worker struct {
	sleeping atomic.Bool
	wake     chan struct{}
	_        [64]byte // keep workers' flags on separate cache lines
}

// spinRounds bounds how long an idle worker polls for the next job before it
// parks (tens of microseconds: longer than the gap between the matrix
// products of one forward pass, far shorter than a human-visible delay).
const spinRounds = 1 << 15

// NewPool starts a pool of the given number of threads (including the
// caller's); threads <= 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads}
	p.matmulFn = p.mm.run
	for i := 1; i < threads; i++ {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		p.done.Add(1)
		go p.work(w, p.gen.Load())
	}
	return p
}

// Threads is the number of threads work is split over.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers and waits for them to exit. The pool must not be
// used afterwards; Close may be called more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.quit.Store(true)
	p.gen.Add(1)
	p.wakeAll()
	p.done.Wait()
}

// Run splits [0,n) into contiguous chunks, calls fn on them from all threads
// and returns when every chunk is done. fn must be safe to call concurrently
// on disjoint ranges and must not call back into the pool (Run or MatMul),
// which would wait for itself.
func (p *Pool) Run(n int, fn func(lo, hi int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run(n, fn)
}

// run is Run with p.mu held.
func (p *Pool) run(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if p.closed {
		panic("kernels: Pool used after Close")
	}
	if len(p.workers) == 0 || n == 1 {
		fn(0, n)
		return
	}
	j := &p.jobs[p.flip]
	p.flip ^= 1
	for i := 0; j.users.Load() != 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
	// A few chunks per thread let the threads that run hand their share
	// to the others when one is descheduled.
	chunks := min(n, p.threads*4)
	j.fn, j.n, j.chunk = fn, n, (n+chunks-1)/chunks
	j.chunks = int64((n + j.chunk - 1) / j.chunk)
	j.next.Store(0)
	j.finished.Store(0)
	p.cur.Store(j)
	p.gen.Add(1)
	p.wakeAll()
	j.drain()
	for i := 0; j.finished.Load() != j.chunks; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
	// Drop the closure (and what it references) now: a worker arriving
	// late finds every chunk claimed and never reads fn.
	j.fn = nil
}

func (p *Pool) wakeAll() {
	for _, w := range p.workers {
		if w.sleeping.Load() && w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
}

// drain claims and runs chunks until none is left.
func (j *job) drain() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		lo := int(c) * j.chunk
		j.fn(lo, min(lo+j.chunk, j.n))
		j.finished.Add(1)
	}
}

// work is a worker's loop; seen is the generation at its creation (read by
// NewPool, not here: a job may be dispatched before this goroutine runs).
func (p *Pool) work(w *worker, seen uint32) {
	defer p.done.Done()
	for {
		seen = p.await(w, seen)
		if p.quit.Load() {
			return
		}
		j := p.cur.Load()
		j.users.Add(1)
		// Re-check after announcing ourselves: if the job was replaced in
		// between, its slot may be being rewritten, so leave it alone.
		if p.cur.Load() == j {
			j.drain()
		}
		j.users.Add(-1)
	}
}

// await returns the new generation once it differs from seen: it spins for
// a while, then parks until wakeAll hands it a token.
func (p *Pool) await(w *worker, seen uint32) uint32 {
	for i := 0; i < spinRounds; i++ {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if i%1024 == 1023 {
			runtime.Gosched()
		}
	}
	w.sleeping.Store(true)
	if g := p.gen.Load(); g != seen {
		// A job arrived while we were going to sleep. If the dispatcher
		// already claimed our flag it has sent (or will send) a token that we
		// must consume so that it does not wake us spuriously later.
		if !w.sleeping.CompareAndSwap(true, false) {
			<-w.wake
		}
		return g
	}
	<-w.wake
	return p.gen.Load()
}
