package cpu

import (
	"hash/maphash"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/model"
)

// Prefix caching: a sequence's key/value cache outlives it. When a new
// prompt starts with tokens some cache already holds (a shared system
// prompt, the earlier turns of a chat), those positions are taken from it
// instead of being computed again: the cache itself when it is free (no
// copy), else a copy of the shared positions into the new sequence's cache.
// The memory is the unit's own KV budget: one cache per slot (MaxSeqs), so
// a free cache is reused least recently used first.
//
// Prompts are matched in blocks of prefixBlock tokens through a hash chain
// (each block's hash covers every token before it, as vLLM's block hashes
// do), then token by token within the best cache, and the tokens themselves
// are compared before anything is reused, so a hash collision can never
// hand over another prompt's keys.

// prefixBlock is the number of tokens one prefix hash covers (vLLM's
// default block size).
const prefixBlock = 16

// slot is one key/value cache and the tokens whose keys and values it holds.
type slot struct {
	cache   *model.Cache
	tokens  []int    // tokens at positions [0, cache.Len())
	hashes  []uint64 // chain hash of each full block of tokens
	lastUse uint64   // engine step at which it was last held, for LRU
	free    bool     // on the engine's free list
}

// prefixHashes appends to dst the chain hashes of the full blocks of
// tokens, continuing after the len(dst) blocks already hashed.
func prefixHashes(seed maphash.Seed, dst []uint64, tokens []int) []uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8 * (prefixBlock + 1)]byte
	for b := len(dst); (b+1)*prefixBlock <= len(tokens); b++ {
		prev := uint64(0)
		if b > 0 {
			prev = dst[b-1]
		}
		put64(buf[:8], prev)
		for i, t := range tokens[b*prefixBlock : (b+1)*prefixBlock] {
			put64(buf[8*(i+1):], uint64(t))
		}
		h.Reset()
		h.Write(buf[:])
		dst = append(dst, h.Sum64())
	}
	return dst
}

func put64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// truncate keeps the first n positions of the slot.
func (s *slot) truncate(n int) {
	s.cache.Truncate(n)
	s.tokens = s.tokens[:n]
	s.hashes = s.hashes[:n/prefixBlock]
}

// sync hashes the blocks that the last step completed.
func (s *slot) sync(seed maphash.Seed) {
	s.hashes = prefixHashes(seed, s.hashes, s.tokens)
}

// matchLen is the number of leading prompt tokens the slot holds, given
// the prompt's block hashes: whole blocks by hash, checked token by token,
// then single tokens. It never exceeds limit.
func (s *slot) matchLen(prompt []int, hashes []uint64, limit int) int {
	b := 0
	for b < len(hashes) && b < len(s.hashes) && hashes[b] == s.hashes[b] {
		b++
	}
	n := min(b*prefixBlock, limit)
	for i := range n {
		if s.tokens[i] != prompt[i] {
			return 0 // a hash collision: reuse nothing
		}
	}
	for n < limit && n < len(s.tokens) && s.tokens[n] == prompt[n] {
		n++
	}
	return n
}
