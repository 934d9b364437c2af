package grammar

import (
	"fmt"
	"slices"
)

// TokenSource is what an Index needs of a tokenizer; runtime.Tokenizer
// has it.
type TokenSource interface {
	VocabSize() int
	// TokenBytes is the text a token stands for inside a longer output.
	TokenBytes(id int) []byte
	IsSpecial(id int) bool
	EOS() []int
}

// Vocab is a tokenizer's vocabulary laid out for computing masks: the
// bytes of every token that stands for text, grouped by first byte. Build
// it once per tokenizer and share it; it is immutable.
type Vocab struct {
	size    int
	words   int
	data    []byte
	off     []int32 // token t is data[off[t]:off[t+1]]
	byFirst [256][]int32
	eos     []int
	eosMask []uint64
	isEOS   []bool
	// longest is the most bytes a token stands for; allBytes says every
	// byte value has a token of its own (byte fallback, byte-level BPE),
	// which the masks' one-token-per-byte bound relies on.
	longest  int32
	allBytes bool
}

// NewVocab indexes t's vocabulary. Special tokens and tokens that stand
// for no text are never allowed by a mask, except the EOS tokens once the
// output is complete.
func NewVocab(t TokenSource) (*Vocab, error) {
	n := t.VocabSize()
	if n <= 0 || n > 1<<24 {
		return nil, fmt.Errorf("grammar: vocabulary size %d is out of range", n)
	}
	v := &Vocab{size: n, words: (n + 63) / 64, off: make([]int32, n+1), isEOS: make([]bool, n), longest: 1}
	var single [256]bool
	for id := 0; id < n; id++ {
		v.off[id] = int32(len(v.data))
		if t.IsSpecial(id) {
			continue
		}
		b := t.TokenBytes(id)
		if len(b) == 0 {
			continue
		}
		v.data = append(v.data, b...)
		v.byFirst[b[0]] = append(v.byFirst[b[0]], int32(id))
		v.longest = max(v.longest, int32(len(b)))
		if len(b) == 1 {
			single[b[0]] = true
		}
	}
	v.allBytes = !slices.Contains(single[:], false)
	v.off[n] = int32(len(v.data))
	v.eosMask = make([]uint64, v.words)
	for _, id := range t.EOS() {
		if id >= 0 && id < n {
			v.eos = append(v.eos, id)
			v.isEOS[id] = true
			v.eosMask[id/64] |= 1 << (id % 64)
		}
	}
	if len(v.eos) == 0 {
		return nil, fmt.Errorf("grammar: the tokenizer has no end-of-sequence token, so a constrained output could never end")
	}
	return v, nil
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

func (v *Vocab) token(id int) []byte { return v.data[v.off[id]:v.off[id+1]] }
