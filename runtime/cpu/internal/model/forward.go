package model

import (
	"fmt"
	"math"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Cache is one sequence's key/value cache: for every layer, the keys and
// values of every position so far, in F16 (llama.cpp's default) or F32.
// Each key/value head has its own contiguous block of positions
// (head-major), so attention streams one head's keys sequentially. F16
// values are stored transposed within a head (one row per head dimension
// over all positions), as llama.cpp stores them: its V·p product runs
// along those rows, and its order is what the F16 kernels reproduce. The
// cache grows in steps up to its maximum length, so a short sequence does
// not hold a full window.
type Cache struct {
	kv       KVType
	k, v     [][]float32   // F32, per layer: heads blocks of capPos×headDim
	k16, v16 [][]uint16    // F16, per layer: keys as k; values heads blocks of headDim×capPos
	mem      *mappedMemory // holds k, v or k16, v16 (mapped.go)
	layers   int
	n        int // positions filled
	next     int // positions filled once the running Forward completes
	max      int
	capPos   int // positions each head's block holds
	heads    int
	hd       int
}

// NewCache returns an empty F32 cache for up to maxLen positions.
func (m *Model) NewCache(maxLen int) *Cache { return m.NewKVCache(maxLen, KVF32) }

// NewKVCache returns an empty cache of element type kv for up to maxLen
// positions.
func (m *Model) NewKVCache(maxLen int, kv KVType) *Cache {
	c := &Cache{
		kv:     kv,
		layers: m.Cfg.Layers,
		max:    maxLen,
		heads:  m.Cfg.KVHeads,
		hd:     m.Cfg.HeadDim,
	}
	if kv == KVF16 {
		c.k16, c.v16 = make([][]uint16, c.layers), make([][]uint16, c.layers)
	} else {
		c.k, c.v = make([][]float32, c.layers), make([][]float32, c.layers)
	}
	c.mem = newMappedMemory(c)
	return c
}

// Type is the cache's element type.
func (c *Cache) Type() KVType { return c.kv }

// Len is the number of positions held.
func (c *Cache) Len() int { return c.n }

// Max is the most positions the cache can hold.
func (c *Cache) Max() int { return c.max }

// Reset empties the cache, keeping its memory for the next sequence.
func (c *Cache) Reset() { c.n, c.next = 0, 0 }

// Truncate keeps the first n positions (n <= Len) and drops the rest, so
// that the next Forward continues at position n.
func (c *Cache) Truncate(n int) {
	if n < 0 || n > c.n {
		panic(fmt.Sprintf("model: truncate a cache of %d positions to %d", c.n, n))
	}
	c.n, c.next = n, n
}

// CopyPrefix makes c hold the first n positions of src (a cache of the same
// model and type): the keys and values of a shared prompt prefix, computed
// once.
func (c *Cache) CopyPrefix(src *Cache, n int) {
	if n > src.n || n > c.max || src.layers != c.layers || src.heads != c.heads || src.hd != c.hd || src.kv != c.kv {
		panic(fmt.Sprintf("model: copy %d positions of a %s cache of %d into a %s one of at most %d", n, src.kv, src.n, c.kv, c.max))
	}
	c.n, c.next = 0, 0
	c.Reserve(n)
	for l := range c.layers {
		for h := range c.heads {
			from, to := h*src.capPos*c.hd, h*c.capPos*c.hd
			if c.kv == KVF32 {
				copy(c.k[l][to:to+n*c.hd], src.k[l][from:from+n*c.hd])
				copy(c.v[l][to:to+n*c.hd], src.v[l][from:from+n*c.hd])
				continue
			}
			copy(c.k16[l][to:to+n*c.hd], src.k16[l][from:from+n*c.hd])
			for d := range c.hd {
				from, to := (h*c.hd+d)*src.capPos, (h*c.hd+d)*c.capPos
				copy(c.v16[l][to:to+n], src.v16[l][from:from+n])
			}
		}
	}
	c.n, c.next = n, n
}

// Bytes is the memory the cache holds now (keys and values of every layer).
func (c *Cache) Bytes() int64 {
	return int64(c.layers) * 2 * int64(c.heads*c.capPos*c.hd) * c.kv.ElemBytes()
}

// Reserve makes room for n positions (at most Max), growing by doubling.
// Forward reserves what it needs; calling Reserve first moves the
// allocation out of the forward pass.
func (c *Cache) Reserve(n int) {
	n = min(n, c.max)
	if n <= c.capPos {
		return
	}
	size := min(max(c.capPos*2, 64, n), c.max)
	if c.kv == KVF16 {
		// Attention reads n_kv cells (a multiple of 32) of every value row.
		size = (size + kernels.KVPad - 1) / kernels.KVPad * kernels.KVPad
	}
	// One mapping for every layer's keys and values; the old one is
	// released once its positions are copied.
	per := c.heads * size * c.hd
	mem := mapAnon(c.layers*2*per*int(c.kv.ElemBytes()), "a KV cache")
	rest := mem
	for l := range c.layers {
		if c.kv == KVF32 {
			c.k[l] = growRows(carve[float32](&rest, per), c.k[l], c.heads, c.capPos, size, c.n*c.hd, c.hd)
			c.v[l] = growRows(carve[float32](&rest, per), c.v[l], c.heads, c.capPos, size, c.n*c.hd, c.hd)
			continue
		}
		c.k16[l] = growRows(carve[uint16](&rest, per), c.k16[l], c.heads, c.capPos, size, c.n*c.hd, c.hd)
		c.v16[l] = growRows(carve[uint16](&rest, per), c.v16[l], c.heads*c.hd, c.capPos, size, c.n, 1)
	}
	c.mem.adopt(mem)
	c.capPos = size
}

// growRows copies the first used elements of each of blocks blocks of
// oldCap×width elements of old into buf, blocks of size×width, and
// returns buf.
func growRows[T float32 | uint16](buf, old []T, blocks, oldCap, size, used, width int) []T {
	if used > 0 {
		for b := range blocks {
			copy(buf[b*size*width:], old[b*oldCap*width:b*oldCap*width+used])
		}
	}
	return buf
}

// head returns layer l's keys and values of key/value head h for the
// first n positions, n×headDim each (F32 caches).
func (c *Cache) head(l, h, n int) (keys, vals []float32) {
	base := h * c.capPos * c.hd
	return c.k[l][base : base+n*c.hd], c.v[l][base : base+n*c.hd]
}

// head16 returns layer l's keys of key/value head h for the first n
// positions (n×headDim) and its transposed values (headDim rows, capPos
// apart) of an F16 cache.
func (c *Cache) head16(l, h, n int) (keys, valsT []uint16) {
	base := h * c.capPos * c.hd
	return c.k16[l][base : base+n*c.hd], c.v16[l][base : base+c.hd*c.capPos]
}

// store writes the key and value of position pos for layer l.
func (c *Cache) store(l, pos int, k, v []float32) {
	hd := c.hd
	for h := range c.heads {
		at := (h*c.capPos + pos) * hd
		if c.kv == KVF32 {
			copy(c.k[l][at:at+hd], k[h*hd:(h+1)*hd])
			copy(c.v[l][at:at+hd], v[h*hd:(h+1)*hd])
			continue
		}
		kernels.ToF16(c.k16[l][at:at+hd], k[h*hd:(h+1)*hd])
		// Values are stored transposed: dimension d of this position is
		// row d's cell pos.
		kernels.ToF16Strided(c.v16[l][h*hd*c.capPos+pos:], c.capPos, v[h*hd:(h+1)*hd])
	}
}

// Batch lists the tokens of one forward pass: any mix of prompt chunks and
// single decode tokens from different sequences. A sequence's tokens must
// appear in position order and continue its cache.
type Batch struct {
	Tokens []int
	Pos    []int
	Caches []*Cache
	// Want marks the tokens whose next-token logits are returned.
	Want []bool
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Tokens, b.Pos, b.Caches, b.Want = b.Tokens[:0], b.Pos[:0], b.Caches[:0], b.Want[:0]
}

// Add appends one token at position pos of cache c.
func (b *Batch) Add(c *Cache, token, pos int, want bool) {
	b.Tokens = append(b.Tokens, token)
	b.Pos = append(b.Pos, pos)
	b.Caches = append(b.Caches, c)
	b.Want = append(b.Want, want)
}

// Len is the number of tokens in the batch.
func (b *Batch) Len() int { return len(b.Tokens) }

// Runner evaluates batches on one model with preallocated activations. It is
// not safe for concurrent use.
type Runner struct {
	m         *Model
	pool      *kernels.Pool
	maxTokens int

	x, xb       []float32 // residual stream and normalised input, n×Dim
	q, att      []float32 // n×QDim (q only without a stacked Q/K/V)
	k, v        []float32 // n×KVDim (only without a stacked Q/K/V)
	hb, hb2     []float32 // n×FFN
	cos, sin    []float32 // n×RopeDim/2
	outIn       []float32 // normalised rows whose logits are wanted
	logits      []float32
	scratch     chan []float32 // attention score buffers, one per running chunk
	scratchLen  int            // length of every scratch buffer
	attnBatch   *Batch         // the batch attention is running on
	attnLayer   int
	attnFn      func(lo, hi int)
	attnSpan    int // query heads per attention task
	attnKV      int // the largest n_kv of the batch's caches (F16 attention scratch)
	wantRows    []int
	swigluFn    func(lo, hi int)
	swigluFused bool      // the gate and up products are in gu
	norm        []float32 // the norm weights normFn applies
	normFn      func(lo, hi int)
	prepareFn   func(lo, hi int)
	qkv, gu     []float32 // outputs of the fused Q/K/V and gate/up products
	embRow      []byte    // one token_embd row, read by embed
}

// NewRunner returns a runner for batches of up to maxTokens tokens.
func NewRunner(m *Model, pool *kernels.Pool, maxTokens int) *Runner {
	c := &m.Cfg
	r := &Runner{
		m: m, pool: pool, maxTokens: maxTokens,
		x:       make([]float32, maxTokens*c.Dim),
		xb:      make([]float32, maxTokens*c.Dim),
		att:     make([]float32, maxTokens*c.QDim()),
		hb:      make([]float32, maxTokens*c.FFN),
		cos:     make([]float32, maxTokens*c.RopeDim/2),
		sin:     make([]float32, maxTokens*c.RopeDim/2),
		scratch: make(chan []float32, 4*pool.Threads()+1),
		embRow:  make([]byte, m.tokEmbd.RowBytes()),
	}
	for range cap(r.scratch) {
		r.scratch <- nil
	}
	if m.fusedQKV {
		r.qkv = make([]float32, maxTokens*(c.QDim()+2*c.KVDim()))
	} else {
		r.q = make([]float32, maxTokens*c.QDim())
		r.k = make([]float32, maxTokens*c.KVDim())
		r.v = make([]float32, maxTokens*c.KVDim())
	}
	if m.fusedGateUp {
		r.gu = make([]float32, maxTokens*2*c.FFN)
	} else {
		r.hb2 = make([]float32, maxTokens*c.FFN)
	}
	r.growScratch(256)
	r.attnFn = r.attentionRange
	r.normFn = r.normRange
	r.prepareFn = r.prepareRange
	r.swigluFn = r.swigluRange
	return r
}

// MaxTokens is the largest batch Forward accepts.
func (r *Runner) MaxTokens() int { return r.maxTokens }

// Forward runs the batch through the model, appends each token's keys and
// values to its cache and returns the logits of the wanted tokens, Vocab
// floats per wanted token in batch order. The slice is reused by the next
// call.
func (r *Runner) Forward(b *Batch) ([]float32, error) {
	n := b.Len()
	if n == 0 {
		return nil, nil
	}
	if n > r.maxTokens {
		return nil, fmt.Errorf("batch of %d tokens exceeds the runner's %d", n, r.maxTokens)
	}
	cfg := &r.m.Cfg
	for _, c := range b.Caches {
		c.next = c.n
	}
	for i, c := range b.Caches {
		if b.Pos[i] != c.next {
			return nil, fmt.Errorf("batch token %d: position %d does not continue its cache at %d", i, b.Pos[i], c.next)
		}
		if b.Pos[i] >= c.max {
			return nil, fmt.Errorf("batch token %d: position %d is outside the cache's %d positions", i, b.Pos[i], c.max)
		}
		if t := b.Tokens[i]; t < 0 || t >= cfg.Vocab {
			return nil, fmt.Errorf("batch token %d: id %d is outside the vocabulary of %d", i, t, cfg.Vocab)
		}
		c.next++
	}
	maxPos, attnWork := 0, 0
	for i, c := range b.Caches {
		c.Reserve(c.next)
		maxPos = max(maxPos, b.Pos[i])
		attnWork += (b.Pos[i] + 1) * cfg.QDim()
	}
	// Group the query heads of each key/value head into one task when
	// that still leaves a few tasks per thread.
	r.attnSpan = 1
	if group := cfg.Heads / cfg.KVHeads; n*cfg.KVHeads >= 2*r.pool.Threads() {
		r.attnSpan = group
	}
	// F16 attention needs, per query head, n_kv scores and the rounded
	// query; F32 attention needs only maxPos+1 scores.
	r.attnKV = kernels.PaddedKV(maxPos)
	r.growScratch(r.attnSpan*r.attnKV + cfg.HeadDim)

	dim, qDim, kvDim, ffn := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.FFN
	x, xb := r.x[:n*dim], r.xb[:n*dim]
	for i, t := range b.Tokens {
		if err := r.m.embed(t, r.embRow, x[i*dim:(i+1)*dim]); err != nil {
			return nil, err
		}
	}
	r.ropeTables(b)

	att := r.att[:n*qDim]
	hb := r.hb[:n*ffn]
	for l := range r.m.layers {
		ly := &r.m.layers[l]
		r.attnBatch, r.attnLayer = b, l
		r.norm = ly.attnNorm
		r.tokens(n, r.normFn)
		if ly.qkv != nil {
			r.pool.MatMul(r.qkv[:n*(qDim+2*kvDim)], ly.qkv, xb, n)
		} else {
			r.pool.MatMul(r.q[:n*qDim], ly.wq, xb, n)
			r.pool.MatMul(r.k[:n*kvDim], ly.wk, xb, n)
			r.pool.MatMul(r.v[:n*kvDim], ly.wv, xb, n)
		}
		r.tokens(n, r.prepareFn)
		if tasks := n * cfg.Heads / r.attnSpan; attnWork < inlineAttention {
			r.attnFn(0, tasks)
		} else {
			r.pool.Run(tasks, r.attnFn)
		}
		r.pool.MatMul(xb, ly.wo, att, n)
		kernels.Add(x, xb)

		r.norm = ly.ffnNorm
		r.tokens(n, r.normFn)
		if ly.gateUp != nil {
			r.pool.MatMul(r.gu[:n*2*ffn], ly.gateUp, xb, n)
			r.swigluFused = true
		} else {
			r.pool.MatMul(hb, ly.gate, xb, n)
			r.pool.MatMul(r.hb2[:n*ffn], ly.up, xb, n)
			r.swigluFused = false
		}
		r.tokens(n, r.swigluFn)
		r.pool.MatMul(xb, ly.down, hb, n)
		kernels.Add(x, xb)
	}
	r.attnBatch = nil
	for _, c := range b.Caches {
		c.n = c.next
	}

	r.wantRows = r.wantRows[:0]
	for i, w := range b.Want {
		if w {
			r.wantRows = append(r.wantRows, i)
		}
	}
	nOut := len(r.wantRows)
	if nOut == 0 {
		return nil, nil
	}
	if cap(r.outIn) < nOut*dim {
		r.outIn = make([]float32, nOut*dim)
	}
	if cap(r.logits) < nOut*cfg.Vocab {
		r.logits = make([]float32, nOut*cfg.Vocab)
	}
	outIn, logits := r.outIn[:nOut*dim], r.logits[:nOut*cfg.Vocab]
	if nOut == n {
		// Decode wants every token: the rows are x's, in order.
		kernels.RMSNormRows(outIn, x, r.m.outNorm, cfg.Eps)
	} else {
		for j, i := range r.wantRows {
			kernels.RMSNorm(outIn[j*dim:(j+1)*dim], x[i*dim:(i+1)*dim], r.m.outNorm, cfg.Eps)
		}
	}
	r.pool.MatMul(logits, r.m.output, outIn, nOut)
	return logits, nil
}

// parallelTokens is the batch size from which per-token vector work runs on
// the pool rather than on the calling thread.
const parallelTokens = 16

// tokens runs fn over the batch's tokens [0,n), on the pool for large
// batches.
func (r *Runner) tokens(n int, fn func(lo, hi int)) {
	if n < parallelTokens {
		fn(0, n)
		return
	}
	r.pool.Run(n, fn)
}

// normRange writes RMSNorm(x)·r.norm into xb for tokens [lo,hi).
func (r *Runner) normRange(lo, hi int) {
	dim := r.m.Cfg.Dim
	kernels.RMSNormRows(r.xb[lo*dim:hi*dim], r.x[lo*dim:hi*dim], r.norm, r.m.Cfg.Eps)
}

// prepareRange turns tokens [lo,hi)'s Q/K/V products into attention
// inputs: biases, per-head norms, rope, and the keys and values appended to
// their caches.
func (r *Runner) prepareRange(lo, hi int) {
	cfg := &r.m.Cfg
	b, l := r.attnBatch, r.attnLayer
	ly := &r.m.layers[l]
	qDim, kvDim := cfg.QDim(), cfg.KVDim()
	w := qDim + 2*kvDim
	for i := lo; i < hi; i++ {
		var qi, ki, vi []float32
		if ly.qkv != nil {
			// Work in place in the stacked product's row.
			row := r.qkv[i*w : (i+1)*w]
			qi, ki, vi = row[:qDim], row[qDim:qDim+kvDim], row[qDim+kvDim:]
		} else {
			qi, ki, vi = r.q[i*qDim:(i+1)*qDim], r.k[i*kvDim:(i+1)*kvDim], r.v[i*kvDim:(i+1)*kvDim]
		}
		if ly.bq != nil {
			kernels.Add(qi, ly.bq)
		}
		if ly.bk != nil {
			kernels.Add(ki, ly.bk)
		}
		if ly.bv != nil {
			kernels.Add(vi, ly.bv)
		}
		if ly.qNorm != nil {
			for h := range cfg.Heads {
				hq := qi[h*cfg.HeadDim : (h+1)*cfg.HeadDim]
				kernels.RMSNorm(hq, hq, ly.qNorm, cfg.Eps)
			}
			for h := range cfg.KVHeads {
				hk := ki[h*cfg.HeadDim : (h+1)*cfg.HeadDim]
				kernels.RMSNorm(hk, hk, ly.kNorm, cfg.Eps)
			}
		}
		r.rope(qi, cfg.Heads, i)
		r.rope(ki, cfg.KVHeads, i)
		b.Caches[i].store(l, b.Pos[i], ki, vi)
	}
}

// queries returns token i's rotated query heads: in the stacked Q/K/V
// product's row when the layer has one, else in q.
func (r *Runner) queries(i int) []float32 {
	qDim := r.m.Cfg.QDim()
	if r.m.layers[r.attnLayer].qkv != nil {
		w := qDim + 2*r.m.Cfg.KVDim()
		return r.qkv[i*w : i*w+qDim]
	}
	return r.q[i*qDim : (i+1)*qDim]
}

// growScratch makes every attention score buffer hold at least n
// positions, growing by doubling so that a long sequence reallocates only
// a logarithmic number of times.
func (r *Runner) growScratch(n int) {
	if n <= r.scratchLen {
		return
	}
	r.scratchLen = max(n, 2*r.scratchLen, 256)
	for range cap(r.scratch) {
		<-r.scratch
	}
	for range cap(r.scratch) {
		r.scratch <- make([]float32, r.scratchLen)
	}
}

// inlineAttention is the attention work (positions × query width summed
// over the batch) below which the calling thread computes attention alone:
// waking the pool costs more than a few ten thousand multiply-adds.
const inlineAttention = 32 << 10

// ropeTables fills the cos/sin of every batch token's rotation angles.
// Without rope scaling they are ggml's bit for bit (ggml_rope_cache_init):
// the angle starts at the position and is multiplied by theta_scale in
// float32 from pair to pair, and its sine and cosine are glibc's sinf and
// cosf (kernels.Sincosf); the F16 cache rounds the rotated query to F16,
// which turns a last-bit difference into a whole F16 step.
func (r *Runner) ropeTables(b *Batch) {
	cfg := &r.m.Cfg
	half := cfg.RopeDim / 2
	if ts := cfg.RopeThetaScale; ts != 0 {
		for i, pos := range b.Pos {
			theta := float32(pos)
			for j := range half {
				r.sin[i*half+j], r.cos[i*half+j] = kernels.Sincosf(theta)
				theta *= ts
			}
		}
		return
	}
	for i, pos := range b.Pos {
		p := float64(float32(pos) * cfg.PosScale)
		for j, f := range cfg.InvFreq {
			s, c := math.Sincos(p * float64(f))
			r.cos[i*half+j], r.sin[i*half+j] = float32(c), float32(s)
		}
	}
}

// rope rotates the heads of one token's Q or K by its position's angles.
func (r *Runner) rope(vec []float32, heads, token int) {
	cfg := &r.m.Cfg
	half := cfg.RopeDim / 2
	cos, sin := r.cos[token*half:(token+1)*half], r.sin[token*half:(token+1)*half]
	for h := range heads {
		kernels.Rope(vec[h*cfg.HeadDim:(h+1)*cfg.HeadDim], cos, sin, cfg.RopeNeox)
	}
}

// attentionRange computes causal attention for tasks [lo,hi) of the
// current batch: each task is one token and r.attnSpan consecutive query
// heads sharing a key/value head, and each token attends to its own
// sequence's positions up to and including its own. Grouping the query
// heads of a key/value head reads each cached key and value once for all
// of them, which matters once the cache outgrows the CPU caches.
func (r *Runner) attentionRange(lo, hi int) {
	cfg := &r.m.Cfg
	b, l := r.attnBatch, r.attnLayer
	hd, qDim := cfg.HeadDim, cfg.QDim()
	group, span := cfg.Heads/cfg.KVHeads, r.attnSpan
	perToken := cfg.Heads / span
	scale := float32(1 / math.Sqrt(float64(hd)))
	scores := <-r.scratch
	for task := lo; task < hi; task++ {
		i, h0 := task/perToken, (task%perToken)*span
		c, pos := b.Caches[i], b.Pos[i]
		n := pos + 1
		q := r.queries(i)[h0*hd : (h0+span)*hd]
		out := r.att[i*qDim+h0*hd : i*qDim+(h0+span)*hd]
		if c.kv == KVF16 {
			var nextKeys, nextVals []uint16
			if task+1 < hi {
				nextKeys, nextVals = r.taskF16(task+1, perToken)
				if b.Caches[(task+1)/perToken].capPos != c.capPos {
					// Its value rows are laid out otherwise than the
					// kernel's prefetch assumes.
					nextVals = nil
				}
			}
			r.attendF16(c, l, h0/group, n, q, out, scores, b.Len(), nextKeys, nextVals)
			continue
		}
		keys, vals := c.head(l, h0/group, n)
		clear(out)
		// One call per head over all cached rows: the per-row Dot and Axpy
		// calls cost as much as the arithmetic for short heads. The row
		// kernels repeat Dot's and Axpy's arithmetic, so results are the
		// same bits.
		for g := range span {
			sg := scores[g*n : (g+1)*n]
			kernels.DotRows(sg, q[g*hd:(g+1)*hd], keys, hd)
			for j := range sg {
				sg[j] *= scale
			}
			kernels.Softmax(sg)
			kernels.AxpyRows(out[g*hd:(g+1)*hd], sg, vals, hd)
		}
	}
	r.scratch <- scores
}

// taskF16 returns the cached keys and transposed values that attention
// task reads, when its cache is F16 (nil otherwise): the current task's
// kernels prefetch their first tiles as they end.
func (r *Runner) taskF16(task, perToken int) (keys, valsT []uint16) {
	b := r.attnBatch
	i, h0 := task/perToken, (task%perToken)*r.attnSpan
	c := b.Caches[i]
	if c.kv != KVF16 {
		return nil, nil
	}
	return c.head16(r.attnLayer, h0/(r.m.Cfg.Heads/r.m.Cfg.KVHeads), (b.Pos[i]+4)&^3)
}

// attendF16 computes attention over an F16 cache for the query heads in
// q (sharing key/value head kvh), the first n positions attended, into
// out, as llama.cpp's CPU backend does (kernels/kvf16.go): the query and
// the probabilities rounded to F16, soft_max_ext's scale 1/sqrtf(headDim),
// and n_kv cells: this cache's filled positions after the batch, padded to
// 32 (for one sequence, llama.cpp's n_kv; the cache's capacity is a
// multiple of 32, so the cells exist). batch is the forward pass's token
// count.
func (r *Runner) attendF16(c *Cache, l, kvh, n int, q, out, scratch []float32, batch int, nextKeys, nextVals []uint16) {
	hd := c.hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	nkv := kernels.PaddedKV(c.next - 1)
	// Score whole groups of four keys (the kernels' tile): the rows past
	// n exist (capPos is a multiple of 32) and their scores are masked.
	n4 := (n + 3) &^ 3
	keys, valsT := c.head16(l, kvh, n4)
	q16, p := scratch[:hd], scratch[hd:hd+nkv]
	groups := len(q) / hd
	for g := range groups {
		// Each kernel prefetches the start of what the next call of its
		// kind reads (same layout): this head's again, already cached, for
		// the next query head of a group; the next task's after the last.
		var nk, nv []uint16
		if g == groups-1 {
			nk, nv = nextKeys, nextVals
		}
		kernels.RoundF16(q16, q[g*hd:(g+1)*hd])
		kernels.KeyScoresF16(p[:n4], q16, keys, hd, batch, nk)
		kernels.SoftmaxGGML(p, n, nkv, scale)
		kernels.RoundF16(p[:n], p[:n])
		kernels.ValuesF16(out[g*hd:(g+1)*hd], p, valsT, c.capPos, n, nkv, batch, nv)
	}
}

// swigluRange computes hb = silu(gate) * up for tokens [lo,hi), reading
// gate and up from the fused product's rows or from hb and hb2.
func (r *Runner) swigluRange(lo, hi int) {
	ffn := r.m.Cfg.FFN
	if !r.swigluFused {
		kernels.SwiGLU(r.hb[lo*ffn:hi*ffn], r.hb2[lo*ffn:hi*ffn])
		return
	}
	for t := lo; t < hi; t++ {
		row := r.gu[t*2*ffn : (t+1)*2*ffn]
		kernels.SwiGLU(row[:ffn], row[ffn:])
		copy(r.hb[t*ffn:(t+1)*ffn], row[:ffn])
	}
}
