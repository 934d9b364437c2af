package cpu

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/model"
)

// Bench measures raw forward-pass speed the way llama-bench does: prompt
// processing as one batch per prompt, generation one token per sequence per
// step, no sampling. It bypasses the engine's scheduler.
type Bench struct {
	file    *gguf.File
	model   *model.Model
	pool    *kernels.Pool
	runner  *model.Runner
	threads int
	name    string
	kvType  model.KVType
	// caches are reused from test to test: a new cache per test leaves
	// the old one as garbage that the Go heap keeps until its next
	// collection (with GOGC's default, once the heap has doubled), and
	// peak RSS counts it; llama-bench keeps one cache too.
	caches []*model.Cache
}

// OpenBench loads the model at path for benchmarking with the given number
// of threads (0: every core) and key/value cache type ("f16", "" for the
// default, or "f32"). Prompt tests may use up to maxPrompt tokens.
func OpenBench(path string, threads, maxPrompt int, kvType string) (*Bench, error) {
	if threads <= 0 {
		threads = DefaultThreads()
	}
	if maxPrompt <= 0 {
		return nil, fmt.Errorf("bench prompt length %d must be positive", maxPrompt)
	}
	kv, err := model.ParseKVType(kvType)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := model.Load(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	name := m.Cfg.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	pool := kernels.NewPool(threads)
	return &Bench{
		file: f, model: m, pool: pool, threads: threads, name: name, kvType: kv,
		runner: model.NewRunner(m, pool, maxPrompt),
	}, nil
}

// Close releases the model and threads.
func (b *Bench) Close() error {
	b.pool.Close()
	return b.file.Close()
}

// Name is general.name or the file name.
func (b *Bench) Name() string { return b.name }

// Threads is the thread count in use.
func (b *Bench) Threads() int { return b.threads }

// KVCacheType is the key/value cache's element type ("f16" or "f32").
func (b *Bench) KVCacheType() string { return b.kvType.String() }

// SizeBytes is the storage size of the weights.
func (b *Bench) SizeBytes() int64 { return b.model.WeightBytes() }

// Type names the weight type of the attention matrices ("Q8_0").
func (b *Bench) Type() string { return b.model.WeightType().String() }

// Prompt evaluates n prompt tokens as one batch into an empty cache and
// returns the elapsed time, logits of the last token included.
func (b *Bench) Prompt(n int) (time.Duration, error) {
	if n > b.runner.MaxTokens() {
		return 0, fmt.Errorf("prompt of %d tokens exceeds the bench's %d", n, b.runner.MaxTokens())
	}
	if n > b.model.Cfg.ContextLength {
		return 0, fmt.Errorf("prompt of %d tokens exceeds the model's context of %d", n, b.model.Cfg.ContextLength)
	}
	c := b.emptyCaches(1, n)[0]
	var batch model.Batch
	for i := range n {
		batch.Add(c, b.token(i), i, i == n-1)
	}
	start := time.Now()
	if _, err := b.runner.Forward(&batch); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Generate decodes n tokens for each of seqs sequences, one batched step
// per token position starting from empty caches, and returns the elapsed
// time (seqs*n tokens in all).
func (b *Bench) Generate(n, seqs int) (time.Duration, error) {
	if seqs <= 0 || seqs > b.runner.MaxTokens() {
		return 0, fmt.Errorf("%d sequences: want 1 to %d", seqs, b.runner.MaxTokens())
	}
	if n > b.model.Cfg.ContextLength {
		return 0, fmt.Errorf("%d tokens exceed the model's context of %d", n, b.model.Cfg.ContextLength)
	}
	caches := b.emptyCaches(seqs, n)
	var batch model.Batch
	start := time.Now()
	for pos := range n {
		batch.Reset()
		for s, c := range caches {
			batch.Add(c, b.token(pos+s), pos, true)
		}
		if _, err := b.runner.Forward(&batch); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// emptyCaches returns seqs empty caches with room for n positions each,
// reusing the bench's earlier caches.
func (b *Bench) emptyCaches(seqs, n int) []*model.Cache {
	for len(b.caches) < seqs {
		b.caches = append(b.caches, b.model.NewKVCache(b.model.Cfg.ContextLength, b.kvType))
	}
	caches := b.caches[:seqs]
	for _, c := range caches {
		c.Reset()
		c.Reserve(n)
	}
	return caches
}

// token picks a deterministic, varied token id for position i.
func (b *Bench) token(i int) int { return (i*7919 + 1) % b.model.Cfg.Vocab }
