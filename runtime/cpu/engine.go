// Package cpu is the pure-Go inference engine: it serves Llama-family GGUF
// models (llama, mistral, qwen2, qwen3) on the host CPU with a KV cache per
// sequence, chunked prefill and continuous batching, behind the
// runtime.Engine contract.
package cpu

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/model"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/sample"
	"github.com/ttis-dev/ttis/units"
)

// Version identifies this engine build in Info.
const Version = "ttis-cpu/1"

// Defaults for Options fields left zero.
const (
	DefaultMaxSeqs      = 8
	DefaultPrefillChunk = 256
)

// maxLogitRows bounds the prompt positions per step, over all sequences,
// whose logits are kept for prompt logprobs (each row is a vocabulary of
// floats).
const maxLogitRows = 64

// ErrClosed is returned by Generate after Close.
var ErrClosed = errors.New("cpu engine is closed")

// Options configures New.
type Options struct {
	// Name is the served model name; "" uses general.name, else the file
	// name without extension.
	Name string
	// Threads is the number of compute threads; 0 uses every core.
	Threads int
	// MaxContext bounds prompt plus output tokens per sequence; 0 (or more
	// than the model's trained context) uses the model's context_length.
	MaxContext int
	// MaxSeqs is how many sequences run at once (more wait in a queue);
	// 0 means DefaultMaxSeqs.
	MaxSeqs int
	// PrefillChunk is the most prompt tokens evaluated per scheduler step,
	// so that running sequences keep producing tokens while a long prompt
	// is read; 0 means DefaultPrefillChunk.
	PrefillChunk int
	// NoPrefixCache turns prefix caching off: every prompt is computed
	// from its first token (prefix.go).
	NoPrefixCache bool
	// KVCacheType is the key/value cache's element type: "f16" (the
	// default, "" too; llama.cpp's default) or "f32".
	KVCacheType string
	// Tokenizer overrides the tokenizer read from the GGUF file.
	Tokenizer runtime.Tokenizer
	// Now is the clock that stamps tokens; nil uses time.Now.
	Now func() time.Time
}

// Engine is the cpu runtime's runtime.Engine.
type Engine struct {
	file    *gguf.File
	model   *model.Model
	tok     runtime.Tokenizer
	pool    *kernels.Pool
	runner  *model.Runner
	info    runtime.Info
	eos     []int
	maxSeqs int
	chunk   int
	kvType  model.KVType
	now     func() time.Time

	mu     sync.Mutex
	queue  []*sequence
	closed bool
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once

	// Owned by the scheduler goroutine.
	prefixCache bool
	seed        maphash.Seed
	steps       uint64
	slots       []*slot // every cache, held or free (at most maxSeqs)
	free        []*slot
	hashBuf     []uint64
	batch       model.Batch
	rows        []rowRef
	active      []*sequence
}

// sequence is one Generate call as the scheduler tracks it.
type sequence struct {
	ctx       context.Context
	req       runtime.Request
	stream    *runtime.Stream
	slot      *slot
	cache     *model.Cache // slot.cache
	sampler   *sample.Sampler
	stops     map[int]bool
	prefilled int // prompt tokens fed to the model
	generated int
	last      int // last sampled token, fed on the next step
	promptLP  []runtime.Token
	ended     bool
	masked    []float32 // logits under the request's constraint (constrain.go)
}

// rowRef ties a logits row of the current batch to its sequence: the
// prompt index it was computed at, or -1 for a decode step.
type rowRef struct {
	seq         *sequence
	promptIndex int
}

// Open is the runtime constructor for a cpu unit: Unit.Model is the GGUF
// path, Unit.CPU the thread count and KV cache type, Unit.Limits the
// context window and the number of concurrent sequences.
func Open(ctx context.Context, u *units.Unit) (runtime.Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, err := New(u.Model, Options{
		Name:        u.Name,
		Threads:     u.CPU.Threads,
		MaxContext:  u.Limits.MaxContext,
		MaxSeqs:     u.Limits.MaxConcurrency,
		KVCacheType: u.CPU.KVCacheType,
	})
	if err != nil {
		return nil, fmt.Errorf("unit %s: %w", u.Name, err)
	}
	return e, nil
}

// New loads the GGUF model at path and starts the scheduler.
func New(path string, opt Options) (*Engine, error) {
	if opt.Threads < 0 || opt.MaxContext < 0 || opt.MaxSeqs < 0 || opt.PrefillChunk < 0 {
		return nil, fmt.Errorf("cpu engine options: threads, max context, max sequences and prefill chunk must not be negative")
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	kvType, err := model.ParseKVType(opt.KVCacheType)
	if err != nil {
		f.Close()
		return nil, err
	}
	m, err := model.Load(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	tok := opt.Tokenizer
	if tok == nil {
		if tok, err = loadTokenizer(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("load tokenizer of %s: %w", path, err)
		}
	}
	if tok.VocabSize() > m.Cfg.Vocab {
		f.Close()
		return nil, fmt.Errorf("model %s: tokenizer has %d tokens but token_embd.weight only %d rows", path, tok.VocabSize(), m.Cfg.Vocab)
	}
	threads := opt.Threads
	if threads == 0 {
		threads = DefaultThreads()
	}
	maxCtx := m.Cfg.ContextLength
	if opt.MaxContext > 0 && opt.MaxContext < maxCtx {
		maxCtx = opt.MaxContext
	}
	maxSeqs := opt.MaxSeqs
	if maxSeqs == 0 {
		maxSeqs = DefaultMaxSeqs
	}
	chunk := opt.PrefillChunk
	if chunk == 0 {
		chunk = DefaultPrefillChunk
	}
	name := opt.Name
	if name == "" {
		name = m.Cfg.Name
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	pool := kernels.NewPool(threads)
	e := &Engine{
		file:    f,
		model:   m,
		tok:     tok,
		pool:    pool,
		runner:  model.NewRunner(m, pool, chunk+maxSeqs),
		eos:     tok.EOS(),
		maxSeqs: maxSeqs,
		chunk:   chunk,
		kvType:  kvType,
		now:     now,
		seed:    maphash.MakeSeed(),

		prefixCache: !opt.NoPrefixCache,
		info: runtime.Info{
			Model:      name,
			Runtime:    "cpu",
			MaxContext: maxCtx,
			Version: fmt.Sprintf("%s (%s %s, %d threads, KV cache %s, %s per token, at most %s for %d slots of %d tokens)",
				Version, m.Cfg.Arch, m.WeightType(), threads, kvType, kvSize(m.KVBytesPerToken(kvType)),
				kvSize(KVCacheBytes(m.KVBytesPerToken(kvType), maxCtx, maxSeqs)), maxSeqs, maxCtx),
		},
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go e.loop()
	return e, nil
}

// KVCacheBytes is the most key/value cache memory the engine holds: one
// cache per slot, each growing up to the context window (positions of
// keys and values in the cache's type; the prefix cache lives in the same
// caches).
func KVCacheBytes(perToken int64, maxContext, maxSeqs int) int64 {
	return perToken * int64(maxContext) * int64(maxSeqs)
}

// KVCacheShape reads the model shape of an open GGUF file: the key/value
// cache bytes one position takes on this engine with cache type kvType
// ("f16", "" for the default, or "f32") and the trained context length
// (ttisctl model info shows the cache a unit would hold).
func KVCacheShape(f *gguf.File, kvType string) (perToken int64, contextLength int, err error) {
	kv, err := model.ParseKVType(kvType)
	if err != nil {
		return 0, 0, err
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return 0, 0, err
	}
	return cfg.KVBytesPerToken(kv), cfg.ContextLength, nil
}

// kvSize formats a byte count in KiB, MiB or GiB.
func kvSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// DefaultThreads is the thread count used when none is configured: every
// core.
func DefaultThreads() int { return goruntime.NumCPU() }

// Info describes the served model.
func (e *Engine) Info() runtime.Info { return e.info }

// Tokenizer returns the model's tokenizer.
func (e *Engine) Tokenizer() runtime.Tokenizer { return e.tok }

// Generate validates the request and queues it for the scheduler.
func (e *Engine) Generate(ctx context.Context, req *runtime.Request) (*runtime.Stream, error) {
	vocab := e.model.Cfg.Vocab
	if err := req.Check(e.info.MaxContext, vocab); err != nil {
		return nil, err
	}
	s := &sequence{
		ctx:    ctx,
		req:    *req,
		stream: runtime.NewStream(len(req.Prompt)),
	}
	s.req.Prompt = append([]int(nil), req.Prompt...)
	s.req.Logprobs = min(s.req.Logprobs, vocab)
	s.req.PromptLogprobs = min(s.req.PromptLogprobs, vocab)
	if len(req.StopTokenIDs) > 0 {
		s.stops = make(map[int]bool, len(req.StopTokenIDs))
		for _, t := range req.StopTokenIDs {
			s.stops[t] = true
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.queue = append(e.queue, s)
	e.mu.Unlock()
	e.signal()
	return s.stream, nil
}

// Close stops the scheduler, ends every stream with FinishAbort and releases
// the model file.
func (e *Engine) Close() error {
	var err error
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		e.signal()
		<-e.done
		e.pool.Close()
		err = e.file.Close()
	})
	return err
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// loop is the scheduler: it owns the model, the caches and every admitted
// sequence.
func (e *Engine) loop() {
	defer close(e.done)
	var waiting []*sequence
	for {
		e.mu.Lock()
		closed := e.closed
		waiting = append(waiting, e.queue...)
		clear(e.queue)
		e.queue = e.queue[:0]
		e.mu.Unlock()
		if closed {
			for _, s := range append(waiting, e.active...) {
				s.stream.Finish(runtime.FinishAbort, ErrClosed)
			}
			return
		}
		waiting = e.dropCancelled(waiting)
		e.active = e.dropCancelled(e.active)
		for len(e.active) < e.maxSeqs && len(waiting) > 0 {
			s := waiting[0]
			waiting[0] = nil
			waiting = waiting[1:]
			e.admit(s)
			s.sampler = sample.New(s.req.Sampling, e.model.Cfg.Vocab, s.req.Prompt)
			e.active = append(e.active, s)
		}
		if len(e.active) == 0 {
			<-e.wake
			continue
		}
		e.steps++
		if err := e.step(); err != nil {
			// A forward error is a bug or a corrupt model; fail the
			// sequences of this step rather than the whole engine, and
			// forget what their caches hold.
			for _, s := range e.active {
				s.stream.Finish(runtime.FinishAbort, fmt.Errorf("cpu engine: %w", err))
				s.ended = true
				s.slot.truncate(0)
			}
		}
		e.active = e.retire(e.active)
	}
}

// dropCancelled aborts sequences whose context ended.
func (e *Engine) dropCancelled(seqs []*sequence) []*sequence {
	for _, s := range seqs {
		if err := s.ctx.Err(); err != nil {
			s.stream.Finish(runtime.FinishAbort, err)
			s.ended = true
		}
	}
	return e.retire(seqs)
}

// retire removes ended sequences, returning their caches to the free list
// with what they hold, for later prompts that share a prefix with it.
func (e *Engine) retire(seqs []*sequence) []*sequence {
	kept := seqs[:0]
	for _, s := range seqs {
		if !s.ended {
			kept = append(kept, s)
			continue
		}
		if sl := s.slot; sl != nil {
			if !e.prefixCache {
				sl.truncate(0)
			}
			sl.lastUse, sl.free = e.steps, true
			e.free = append(e.free, sl)
			s.slot, s.cache = nil, nil
		}
	}
	clear(seqs[len(kept):])
	return kept
}

// admit gives s a cache: the free cache that holds the longest prefix of
// its prompt, or the least recently used free one (a new one while fewer
// than MaxSeqs exist) with the longest prefix any cache holds copied in.
// Prompt logprobs need every prompt position's logits, so such requests
// compute their whole prompt.
func (e *Engine) admit(s *sequence) {
	p := s.req.Prompt
	limit := len(p) - 1 // the last prompt token is always computed: its logits give the first output token
	var best *slot
	n := 0
	if e.prefixCache && s.req.PromptLogprobs < 0 && limit > 0 {
		e.hashBuf = prefixHashes(e.seed, e.hashBuf[:0], p[:limit])
		for _, sl := range e.slots {
			m := sl.matchLen(p, e.hashBuf, limit)
			if m > n || (m == n && m > 0 && sl.free && !best.free) {
				best, n = sl, m
			}
		}
	}
	var sl *slot
	if best != nil && best.free {
		sl = best
		e.unfree(sl)
		sl.truncate(n)
	} else {
		sl = e.takeSlot()
		if best != nil {
			sl.cache.CopyPrefix(best.cache, n)
			sl.tokens = append(sl.tokens, best.tokens[:n]...)
			sl.hashes = append(sl.hashes, best.hashes[:n/prefixBlock]...)
		}
	}
	sl.lastUse = e.steps
	s.slot, s.cache, s.prefilled = sl, sl.cache, n
	s.stream.SetCachedTokens(n)
}

// takeSlot returns an empty cache: a new one while fewer than MaxSeqs exist,
// else the free one used least recently (its prefix is forgotten).
func (e *Engine) takeSlot() *slot {
	if len(e.free) == 0 || len(e.slots) < e.maxSeqs {
		sl := &slot{cache: e.model.NewKVCache(e.info.MaxContext, e.kvType)}
		e.slots = append(e.slots, sl)
		return sl
	}
	lru := e.free[0]
	for _, sl := range e.free[1:] {
		if sl.lastUse < lru.lastUse {
			lru = sl
		}
	}
	e.unfree(lru)
	lru.truncate(0)
	return lru
}

// unfree removes sl from the free list.
func (e *Engine) unfree(sl *slot) {
	for i, f := range e.free {
		if f == sl {
			e.free = append(e.free[:i], e.free[i+1:]...)
			break
		}
	}
	sl.free = false
}

// step runs one forward pass: a decode token for every sequence past its
// prompt, then prompt chunks up to the prefill budget, and hands each
// logits row to its sequence.
func (e *Engine) step() error {
	b := &e.batch
	b.Reset()
	e.rows = e.rows[:0]
	for _, s := range e.active {
		if s.prefilled == len(s.req.Prompt) {
			b.Add(s.cache, s.last, s.cache.Len(), true)
			s.slot.tokens = append(s.slot.tokens, s.last)
			e.rows = append(e.rows, rowRef{s, -1})
		}
	}
	budget := e.chunk
	// Prompt logprobs keep every position's logits: bound those rows per
	// step, across sequences, to bound the logits memory.
	lpBudget := maxLogitRows
	for _, s := range e.active {
		if budget == 0 {
			break
		}
		p := s.req.Prompt
		if s.prefilled == len(p) {
			continue
		}
		end := min(len(p), s.prefilled+budget)
		if s.req.PromptLogprobs >= 0 {
			end = min(end, s.prefilled+lpBudget)
			lpBudget -= end - s.prefilled
			if end == s.prefilled {
				continue
			}
		}
		s.slot.tokens = append(s.slot.tokens, p[s.prefilled:end]...)
		for i := s.prefilled; i < end; i++ {
			want := i == len(p)-1 || s.req.PromptLogprobs >= 0
			b.Add(s.cache, p[i], i, want)
			if want {
				e.rows = append(e.rows, rowRef{s, i})
			}
		}
		budget -= end - s.prefilled
		s.prefilled = end
	}
	logits, err := e.runner.Forward(b)
	if err != nil {
		return err
	}
	for _, s := range e.active {
		s.slot.sync(e.seed)
	}
	vocab := e.model.Cfg.Vocab
	now := e.now()
	for j, r := range e.rows {
		row := logits[j*vocab : (j+1)*vocab]
		if r.promptIndex < 0 {
			e.emit(r.seq, row, now)
			continue
		}
		e.promptRow(r.seq, r.promptIndex, row, now)
	}
	return nil
}

// promptRow handles the logits computed at prompt position i: the logprob
// of prompt token i+1 when asked, and the first generated token at the end
// of the prompt.
func (e *Engine) promptRow(s *sequence, i int, row []float32, now time.Time) {
	p := s.req.Prompt
	if n := s.req.PromptLogprobs; n >= 0 {
		if s.promptLP == nil {
			s.promptLP = make([]runtime.Token, len(p))
			s.promptLP[0] = runtime.Token{ID: p[0]}
		}
		if i+1 < len(p) {
			t := runtime.Token{ID: p[i+1]}
			var top []runtime.TokenLogprob
			if n > 0 {
				top = make([]runtime.TokenLogprob, 0, n)
			}
			t.Logprob, t.Top = sample.Logprobs(row, p[i+1], n, top)
			s.promptLP[i+1] = t
		}
	}
	if i != len(p)-1 {
		return
	}
	if s.promptLP != nil {
		s.stream.SetPromptLogprobs(s.promptLP)
	}
	if s.req.MaxTokens == 0 || len(p) >= e.info.MaxContext {
		s.stream.Finish(runtime.FinishLength, nil)
		s.ended = true
		return
	}
	e.emit(s, row, now)
}

// emit samples a token from row, pushes it and ends the sequence on a stop
// token, EOS, its token limit or a full context window.
func (e *Engine) emit(s *sequence, row []float32, now time.Time) {
	id, err := e.sample(s, row)
	if err != nil {
		s.stream.Finish(runtime.FinishAbort, err)
		s.ended = true
		return
	}
	t := runtime.Token{ID: id, Time: now}
	if n := s.req.Logprobs; n >= 0 {
		var top []runtime.TokenLogprob
		if n > 0 {
			top = make([]runtime.TokenLogprob, 0, n)
		}
		t.Logprob, t.Top = sample.Logprobs(row, id, n, top)
	}
	s.stream.Push(t)
	s.generated++
	s.last = id
	switch {
	case s.stops[id] || (!s.req.IgnoreEOS && e.isEOS(id)):
		s.stream.Finish(runtime.FinishStop, nil)
	case s.generated >= s.req.MaxTokens || s.cache.Len()+1 >= e.info.MaxContext:
		// The sequence now holds cache.Len()+1 tokens (the sampled one is
		// not fed yet): the window is full.
		s.stream.Finish(runtime.FinishLength, nil)
	default:
		return
	}
	s.ended = true
}

func (e *Engine) isEOS(id int) bool {
	for _, t := range e.eos {
		if t == id {
			return true
		}
	}
	return false
}

var _ runtime.Engine = (*Engine)(nil)
