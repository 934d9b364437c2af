package tokenizer

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Pre-tokenizer expressions. Byte-level BPE first splits text into words
// (contractions, letter runs, digit runs, punctuation runs, whitespace) and
// merges only inside a word. The look-ahead "\s+(?!\S)" leaves the last
// space of a run to start the next word, which Go's regexp cannot express,
// hence regexp2.
const (
	// splitGPT2 is the original GPT-2 split.
	splitGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// splitLlama3 is Llama 3's: case-insensitive contractions, a letter run
	// with one leading non-letter, digits in groups of up to three.
	splitLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// splitQwen2 is Llama 3's with single digits.
	splitQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// preTokenizers maps tokenizer.ggml.pre values to their split expressions.
var preTokenizers = map[string]string{
	"default":   splitGPT2,
	"gpt-2":     splitGPT2,
	"gpt2":      splitGPT2,
	"llama3":    splitLlama3,
	"llama-bpe": splitLlama3,
	"qwen2":     splitQwen2,
}

// splitTimeout bounds one pre-tokenizer match, so pathological input cannot
// stall a request in regexp2's backtracking.
const splitTimeout = 2 * time.Second

// byteRune maps each byte to the printable character byte-level BPE uses
// for it: printable Latin-1 bytes map to themselves, the rest (controls,
// space, 0x7F-0xA0, 0xAD) to U+0100 upwards in byte order.
var byteRune, runeByte = byteMapping()

func byteMapping() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	rev := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
		if printable {
			fwd[b] = rune(b)
		} else {
			fwd[b] = next
			next++
		}
		rev[fwd[b]] = byte(b)
	}
	return fwd, rev
}

// mapBytes encodes raw bytes as byte-level BPE characters.
func mapBytes(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteRune[s[i]])
	}
	return sb.String()
}

// unmapBytes decodes byte-level BPE characters back to raw bytes; a
// character outside the mapping is kept as its UTF-8.
func unmapBytes(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if b, ok := runeByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

func (t *Tokenizer) initGPT2(f *gguf.File) error {
	t.pre = "default"
	if pre, ok := f.String("tokenizer.ggml.pre"); ok {
		t.pre = pre
	}
	expr, ok := preTokenizers[t.pre]
	if !ok {
		return fmt.Errorf("unsupported tokenizer.ggml.pre %q (supported: default, gpt-2, llama3, llama-bpe, qwen2)", t.pre)
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return fmt.Errorf("compile pre-tokenizer %q: %w", t.pre, err)
	}
	re.MatchTimeout = splitTimeout
	t.splitter = re
	merges, err := f.RequireStrings("tokenizer.ggml.merges")
	if err != nil {
		return err
	}
	t.ranks = make(map[[2]string]int, len(merges))
	for i, m := range merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || a == "" || b == "" {
			return fmt.Errorf("tokenizer.ggml.merges[%d] = %q is not two pieces separated by a space", i, m)
		}
		if _, dup := t.ranks[[2]string{a, b}]; !dup {
			t.ranks[[2]string{a, b}] = i
		}
	}
	return nil
}

// ignoreMerges reports whether a pre-tokenized word that is itself a
// vocabulary entry is taken whole (Llama 3's tokenizer does this).
func (t *Tokenizer) ignoreMerges() bool { return t.pre == "llama3" || t.pre == "llama-bpe" }

// encodeGPT2 appends the byte-level BPE tokens of text.
func (t *Tokenizer) encodeGPT2(ids []int, text string) ([]int, error) {
	words, err := t.split(text)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		mapped := mapBytes(w)
		if id, ok := t.index[mapped]; ok && t.ignoreMerges() && t.mergeable(id) {
			ids = append(ids, id)
			continue
		}
		syms := mergeSymbols(mapped, func(l, r, _ string) (float64, bool) {
			rank, ok := t.ranks[[2]string{l, r}]
			return -float64(rank), ok
		})
		for _, sym := range syms {
			if id, ok := t.index[sym]; ok {
				ids = append(ids, id)
				continue
			}
			// A merge produced a piece the vocabulary lacks: fall back to
			// its characters.
			for _, r := range sym {
				id, ok := t.index[string(r)]
				switch {
				case ok:
					ids = append(ids, id)
				case t.unk >= 0:
					ids = append(ids, t.unk)
				default:
					return nil, fmt.Errorf("tokenize: byte 0x%02X has no token and the vocabulary has no unknown token", runeByte[r])
				}
			}
		}
	}
	return ids, nil
}

// split cuts text into pre-tokenizer words. Matching runs on runes, but the
// words are cut from the original bytes, so invalid UTF-8 survives intact.
func (t *Tokenizer) split(text string) ([]string, error) {
	runes := make([]rune, 0, len(text))
	offsets := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		runes = append(runes, r)
		offsets = append(offsets, i)
		i += n
	}
	offsets = append(offsets, len(text))
	var words []string
	covered := 0 // rune index up to which text is assigned to words
	m, err := t.splitter.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = t.splitter.FindNextMatch(m) {
		if m.Length == 0 {
			continue
		}
		if m.Index > covered {
			words = append(words, text[offsets[covered]:offsets[m.Index]])
		}
		words = append(words, text[offsets[m.Index]:offsets[m.Index+m.Length]])
		covered = m.Index + m.Length
	}
	if err != nil {
		return nil, fmt.Errorf("tokenize: pre-tokenizer: %w", err)
	}
	if covered < len(runes) {
		words = append(words, text[offsets[covered]:])
	}
	return words, nil
}
