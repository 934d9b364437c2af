// Package sim is the simulated accelerator runtime: an Engine with a real
// (simple) tokenizer and a seeded Markov-chain text model whose timing follows
// a catalog (model, device) pair's theoretical performance targets. It needs
// no hardware and serves tests, demos and capacity planning; everything it
// reports is labelled simulated.
//
// # Timing model
//
// The engine runs one scheduling loop. Each iteration
//
//  1. runs at most one prefill, taking TTFT·(prompt tokens / target ISL):
//     prefills are serialised and pause decoding, as on a device without
//     chunked prefill. The prefill produces the sequence's first token;
//  2. then runs one decode step for every sequence already decoding,
//     producing one token each. A step takes 1000/tput_user ms regardless of
//     how many sequences share it, up to MaxConcurrency (this is what the
//     hardware targets assume); beyond that the step repeats once per extra
//     MaxConcurrency-sized group.
//
// Every delay is multiplied by TimeScale. Delays go through an injectable
// Clock.
//
// TimeScale 0 (for measuring the front door's overhead) skips sleeping but
// does not race ahead of the server: the device is then exactly as fast as
// its host. A step may begin while the server is still taking the previous
// step's output, but not while it has not taken the one before (window):
// one step in flight beside the host's output processing, as in vLLM's
// asynchronous output processing. An unbounded loop would bury the server
// in a backlog, and what the front door is measured to add would be that
// backlog; lock-step would make every token its own write on the
// connection. A server that takes nothing for maxHostWait (its client went
// away or stopped reading) is not waited for.
//
// # Text model
//
// See model.go: a first-order Markov chain over the built-in word list,
// drawn from Config.Seed, with a uniform floor so every token has a finite
// logprob. Greedy decoding never ends with EOS; sampling ends with EOS after
// about 1/eosWeight tokens unless IgnoreEOS.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// Clock is the engine's source of time and delay.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, returning ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock uses the system clock and timers.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// spinMargin is the end of a delay that RealClock.Sleep waits out by
// yielding in a loop instead of on a timer: Go timers fire about 0.3 ms
// late at the median on an idle Linux host, which would show in every
// simulated TTFT (measured: first token 365 µs late at the median with a
// plain timer, 8 µs with the spin). At most an eighth of a delay is spun,
// so short decode steps do not keep a core busy; the engine's device-time
// schedule makes up what their timers lose.
const spinMargin = time.Millisecond

// Sleep waits d: on a timer, then for the last part (spinMargin or an
// eighth of d, whichever is less) by yielding until the deadline.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	deadline := time.Now().Add(d)
	if spin := min(spinMargin, d/8); d > spin {
		t := time.NewTimer(d - spin)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		goruntime.Gosched()
	}
	return nil
}

// Timing is the simulated device's speed.
type Timing struct {
	// TTFT is the prefill time of a TargetISL-token prompt.
	TTFT      time.Duration
	TargetISL int
	// Step is one decode step (1000/tput_user ms).
	Step time.Duration
}

// Config describes a simulated engine.
type Config struct {
	// Model is the served model name.
	Model string
	// MaxContext is the context window in tokens.
	MaxContext int
	// MaxConcurrency is how many sequences a decode step serves at the
	// target step time.
	MaxConcurrency int
	Timing         Timing
	// TimeScale multiplies every delay; 0 runs as fast as possible.
	TimeScale float64
	// Seed selects the text model.
	Seed int64
	// Clock defaults to RealClock.
	Clock Clock
	// Version is appended to the engine's version string.
	Version string
	// OnToken, when set, is called with the request id, the token's index
	// in its sequence and its time, as each token is pushed. Benchmarks use
	// it to measure the latency the front door adds; leave it nil
	// otherwise.
	OnToken func(requestID string, index int, at time.Time)
}

// Engine is the simulated accelerator. It implements runtime.Engine.
type Engine struct {
	cfg   Config
	tok   *Tokenizer
	model *textModel
	clock Clock

	mu       sync.Mutex
	incoming []*sequence
	closed   bool
	wake     chan struct{}

	stop    context.CancelFunc
	loopCtx context.Context
	done    chan struct{}
	seeds   atomic.Uint64
	seedMix uint64

	// deviceTime is when the simulated device finishes its current work;
	// only the loop goroutine touches it (see sleep).
	deviceTime time.Time

	// At time_scale 0 the loop runs at most window steps ahead of the
	// server (see waitTaken). epoch numbers the steps; untaken[ep%window]
	// holds ep<<countBits | the number of streams whose oldest untaken
	// token is from step ep. taken is signalled when a count drops to
	// zero; hostWait is waitTaken's timer, reused.
	epoch    atomic.Uint64
	untaken  [window]atomic.Uint64
	taken    chan struct{}
	hostWait *time.Timer
}

// window is how many steps a time_scale 0 engine may run ahead of the
// server taking their output (see the package doc).
const window = 2

// countBits is the width of the stream count in an untaken slot; the epoch
// is in the bits above it.
const countBits = 24

// maxHostWait bounds how long a time_scale 0 step waits for the server to
// take the previous step's output: a consumer stuck writing to a client
// that does not read must not stall the other sequences for longer.
const maxHostWait = time.Millisecond

// maxLag is how far behind its schedule the simulated device may fall and
// still catch up (by skipping sleeps) rather than start a new schedule.
const maxLag = 20 * time.Millisecond

type sequence struct {
	// arrived is when Generate was called.
	arrived  time.Time
	ctx      context.Context
	req      runtime.Request
	st       *runtime.Stream
	smp      *sampler
	prev     int
	produced int
	ctxLen   int
	stops    map[int]bool
	// owed is the epoch of the stream's oldest untaken token, 0 when the
	// server has taken everything (time_scale 0 only).
	owed atomic.Uint64
}

// New validates cfg and starts the engine's scheduling loop.
func New(cfg Config) (*Engine, error) {
	switch {
	case cfg.Model == "":
		return nil, errors.New("sim: model name is empty")
	case cfg.MaxContext <= 0:
		return nil, fmt.Errorf("sim: max_context must be positive, got %d", cfg.MaxContext)
	case cfg.MaxConcurrency <= 0:
		return nil, fmt.Errorf("sim: max_concurrency must be positive, got %d", cfg.MaxConcurrency)
	case cfg.TimeScale < 0:
		return nil, fmt.Errorf("sim: time_scale must not be negative, got %g", cfg.TimeScale)
	case cfg.TimeScale > 0 && (cfg.Timing.TTFT <= 0 || cfg.Timing.TargetISL <= 0 || cfg.Timing.Step <= 0):
		return nil, fmt.Errorf("sim: timing needs a positive ttft, target isl and step, got %+v", cfg.Timing)
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	tok := newTokenizer()
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		cfg:     cfg,
		tok:     tok,
		model:   newTextModel(tok, cfg.Seed),
		clock:   cfg.Clock,
		wake:    make(chan struct{}, 1),
		taken:   make(chan struct{}, 1),
		stop:    cancel,
		loopCtx: ctx,
		done:    make(chan struct{}),
		seedMix: uint64(cfg.Clock.Now().UnixNano()),
	}
	e.epoch.Store(1) // owed 0 means nothing owed
	e.untaken[1%window].Store(1 << countBits)
	go e.loop()
	return e, nil
}

// Info describes the simulated model.
func (e *Engine) Info() runtime.Info {
	v := "sim (simulated accelerator)"
	if e.cfg.Version != "" {
		v += " " + e.cfg.Version
	}
	return runtime.Info{Model: e.cfg.Model, Runtime: "sim", Simulated: true, MaxContext: e.cfg.MaxContext, Version: v}
}

// Tokenizer returns the sim tokenizer.
func (e *Engine) Tokenizer() runtime.Tokenizer { return e.tok }

// Generate queues one sequence for prefill.
func (e *Engine) Generate(ctx context.Context, req *runtime.Request) (*runtime.Stream, error) {
	if err := req.Check(e.cfg.MaxContext, e.tok.VocabSize()); err != nil {
		return nil, err
	}
	s := &sequence{ctx: ctx, req: *req, st: runtime.NewStream(len(req.Prompt)), prev: req.Prompt[len(req.Prompt)-1], ctxLen: len(req.Prompt), arrived: e.clock.Now()}
	if e.cfg.TimeScale == 0 {
		s.st.SetOnTaken(func() { e.tookOutput(s) })
	}
	var seed uint64
	if req.Sampling.HasSeed {
		seed = uint64(req.Sampling.Seed)
	} else {
		seed = e.seedMix + e.seeds.Add(1)*0x9e3779b97f4a7c15
	}
	s.smp = newSampler(req.Sampling, req.Prompt, rand.New(rand.NewPCG(seed, 0xa11ce)))
	if len(req.StopTokenIDs) > 0 {
		s.stops = make(map[int]bool, len(req.StopTokenIDs))
		for _, id := range req.StopTokenIDs {
			s.stops[id] = true
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errors.New("sim engine is closed")
	}
	e.incoming = append(e.incoming, s)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return s.st, nil
}

// Close stops the loop; in-flight streams end with FinishAbort.
func (e *Engine) Close() error {
	e.mu.Lock()
	already := e.closed
	e.closed = true
	e.mu.Unlock()
	if !already {
		e.stop()
	}
	<-e.done
	return nil
}

// tookOutput is every stream's OnTaken at time_scale 0. A take of output
// from a step whose wait already timed out (its slot now counts a newer
// step) does not count. A token pushed between a take and this call goes
// uncounted until the stream's next push: the window paces the loop, it
// does not bound a stream exactly.
func (e *Engine) tookOutput(s *sequence) {
	ep := s.owed.Swap(0)
	if ep == 0 {
		return
	}
	c := &e.untaken[ep%window]
	for range 1000 { // bounded: only the engine and other takes race here
		v := c.Load()
		if v>>countBits != ep || v&(1<<countBits-1) == 0 {
			return
		}
		if c.CompareAndSwap(v, v-1) {
			if (v-1)&(1<<countBits-1) == 0 {
				select {
				case e.taken <- struct{}{}:
				default:
				}
			}
			return
		}
	}
}

// owe records, before a push at time_scale 0, that s will hold output the
// server has not taken.
func (e *Engine) owe(s *sequence) {
	ep := e.epoch.Load()
	if s.owed.CompareAndSwap(0, ep) {
		e.untaken[ep%window].Add(1)
	}
}

// waitTaken starts a new step at time_scale 0, first waiting (at most
// maxHostWait) until the server has taken the output of the step window
// steps back, whose slot the new one reuses.
func (e *Engine) waitTaken() error {
	next := e.epoch.Load() + 1
	c := &e.untaken[next%window]
	defer func() {
		c.Store(next << countBits)
		e.epoch.Store(next)
	}()
	if c.Load()&(1<<countBits-1) == 0 {
		// Nothing to wait for, but let the consumers run.
		goruntime.Gosched()
		return e.loopCtx.Err()
	}
	if e.hostWait == nil {
		e.hostWait = time.NewTimer(maxHostWait)
	} else {
		e.hostWait.Reset(maxHostWait)
	}
	defer e.hostWait.Stop()
	for c.Load()&(1<<countBits-1) != 0 {
		select {
		case <-e.taken:
		case <-e.hostWait.C:
			// A consumer stopped taking (its client is slow or went
			// away): go on without it.
			return nil
		case <-e.loopCtx.Done():
			return e.loopCtx.Err()
		}
	}
	return nil
}

func (e *Engine) sleep(d time.Duration) error {
	if e.cfg.TimeScale == 0 {
		return e.waitTaken()
	}
	// Delays run on a device-time schedule rather than one relative sleep
	// after another: a timer that fires late on a loaded host is made up on
	// the next step, so mean TTFT and TPOT stay what the targets say instead
	// of drifting by every timer's overshoot. Falling further behind than
	// maxLag (the process was descheduled for long) starts a new schedule.
	now := e.clock.Now()
	if e.deviceTime.Before(now.Add(-maxLag)) {
		e.deviceTime = now.Add(-maxLag)
	}
	e.deviceTime = e.deviceTime.Add(time.Duration(float64(d) * e.cfg.TimeScale))
	return e.clock.Sleep(e.loopCtx, e.deviceTime.Sub(now))
}

func (e *Engine) loop() {
	defer close(e.done)
	var prefill, running []*sequence
	// idle is true until work arrives; an idle device starts new work on a
	// fresh schedule.
	idle := true
	abortAll := func(err error) {
		e.mu.Lock()
		prefill = append(prefill, e.incoming...)
		e.incoming = nil
		e.mu.Unlock()
		for _, s := range append(prefill, running...) {
			s.st.Finish(runtime.FinishAbort, err)
		}
	}
	for {
		e.mu.Lock()
		prefill = append(prefill, e.incoming...)
		e.incoming = e.incoming[:0]
		e.mu.Unlock()
		prefill = dropCancelled(prefill)
		running = dropCancelled(running)
		if len(prefill) == 0 && len(running) == 0 {
			select {
			case <-e.wake:
				idle = true
				continue
			case <-e.loopCtx.Done():
				abortAll(errors.New("engine closed"))
				return
			}
		}
		if e.loopCtx.Err() != nil {
			abortAll(errors.New("engine closed"))
			return
		}
		if idle {
			// An idle device starts on a request when it arrives, not when
			// this goroutine got to run.
			e.deviceTime = e.clock.Now()
			if len(prefill) > 0 && prefill[0].arrived.Before(e.deviceTime) {
				e.deviceTime = prefill[0].arrived
			}
			idle = false
		}
		var admitted *sequence
		if len(prefill) > 0 {
			s := prefill[0]
			prefill = prefill[1:]
			d := time.Duration(float64(e.cfg.Timing.TTFT) * float64(len(s.req.Prompt)) / float64(max(e.cfg.Timing.TargetISL, 1)))
			if err := e.sleep(d); err != nil {
				s.st.Finish(runtime.FinishAbort, errors.New("engine closed"))
				continue
			}
			if s.ctx.Err() != nil {
				s.st.Finish(runtime.FinishAbort, s.ctx.Err())
			} else {
				e.prefillDone(s)
				if !s.finished() {
					admitted = s
				}
			}
		}
		if len(running) > 0 {
			groups := (len(running) + e.cfg.MaxConcurrency - 1) / e.cfg.MaxConcurrency
			if err := e.sleep(time.Duration(groups) * e.cfg.Timing.Step); err != nil {
				if admitted != nil {
					running = append(running, admitted)
				}
				continue
			}
			now := e.clock.Now()
			kept := running[:0]
			for _, s := range running {
				if s.ctx.Err() != nil {
					s.st.Finish(runtime.FinishAbort, s.ctx.Err())
					continue
				}
				e.emit(s, now)
				if !s.finished() {
					kept = append(kept, s)
				}
			}
			clear(running[len(kept):])
			running = kept
		}
		if admitted != nil {
			running = append(running, admitted)
		}
	}
}

func dropCancelled(seqs []*sequence) []*sequence {
	kept := seqs[:0]
	for _, s := range seqs {
		if err := s.ctx.Err(); err != nil {
			s.st.Finish(runtime.FinishAbort, err)
			continue
		}
		kept = append(kept, s)
	}
	clear(seqs[len(kept):])
	return kept
}

// finished reports whether the sequence's stream was finished by emit.
func (s *sequence) finished() bool { return s.produced < 0 }

func (e *Engine) prefillDone(s *sequence) {
	if n := s.req.PromptLogprobs; n >= 0 {
		lps := make([]runtime.Token, len(s.req.Prompt))
		for i, id := range s.req.Prompt {
			lps[i].ID = id
			if i == 0 {
				continue
			}
			prev := s.req.Prompt[i-1]
			lps[i].Logprob = float32(e.model.logprob(prev, id))
			if n > 0 {
				lps[i].Top = e.model.top(prev, n, make([]runtime.TokenLogprob, 0, n))
			}
		}
		s.st.SetPromptLogprobs(lps)
	}
	if s.req.MaxTokens == 0 || s.ctxLen >= e.cfg.MaxContext {
		s.st.Finish(runtime.FinishLength, nil)
		s.produced = -1
		return
	}
	e.emit(s, e.clock.Now())
}

// emit samples and pushes one token, finishing the stream when a limit or
// a stop token is hit.
func (e *Engine) emit(s *sequence, now time.Time) {
	id, err := e.next(s)
	if err != nil {
		s.st.Finish(runtime.FinishAbort, err)
		s.produced = -1
		return
	}
	t := runtime.Token{ID: id, Time: now}
	if n := s.req.Logprobs; n >= 0 {
		t.Logprob = float32(e.model.logprob(s.prev, id))
		if n > 0 {
			t.Top = e.model.top(s.prev, n, make([]runtime.TokenLogprob, 0, n))
		}
	}
	if e.cfg.TimeScale == 0 {
		e.owe(s)
	}
	s.st.Push(t)
	if e.cfg.OnToken != nil {
		e.cfg.OnToken(s.req.ID, s.produced, now)
	}
	s.prev = id
	s.produced++
	s.ctxLen++
	switch {
	case id == eosID && !s.req.IgnoreEOS, s.stops[id]:
		s.st.Finish(runtime.FinishStop, nil)
	case s.produced >= s.req.MaxTokens, s.ctxLen >= e.cfg.MaxContext:
		s.st.Finish(runtime.FinishLength, nil)
	default:
		return
	}
	s.produced = -1
}

var _ runtime.Engine = (*Engine)(nil)
