// Package clipbpe is CLIP's tokenizer as open_clip.tokenize runs it
// (open-clip-torch 2.26.1, src/open_clip/tokenizer.py, SimpleTokenizer,
// itself OpenAI's CLIP tokenizer): Clean, a regular-expression split into
// words, byte-level BPE with "</w>" marking each word's end, and 77
// tokens framed by the start and end tokens.
//
// The vocabulary and merges are read from a transformers checkpoint's
// vocab.json and merges.txt, which hold the same 49408 tokens and 48894
// merges as open_clip's bpe_simple_vocab_16e6.txt.gz; open_clip names its
// special tokens <start_of_text> and <end_of_text> where vocab.json has
// <|startoftext|> and <|endoftext|>.
package clipbpe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ContextLength is the number of tokens of every text (DEFAULT_CONTEXT_LENGTH).
const ContextLength = 77

// Bounds on the files: the real ones are 0.8 MiB and 0.5 MiB.
const (
	maxVocabBytes  = 16 << 20
	maxMergesBytes = 16 << 20
	maxTokens      = 1 << 20
)

// Special token names: in vocab.json, and as open_clip matches them in text.
const (
	startToken     = "<|startoftext|>"
	endToken       = "<|endoftext|>"
	startTokenText = "<start_of_text>"
	endTokenText   = "<end_of_text>"
)

// Tokenizer is CLIP's BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	encoder map[string]int
	ranks   map[string]int // "left right" -> merge rank
	byteEnc [256]string
	sot     int
	eot     int
}

// Load reads vocab.json and merges.txt.
func Load(vocabPath, mergesPath string) (*Tokenizer, error) {
	vocab, err := readBounded(vocabPath, maxVocabBytes)
	if err != nil {
		return nil, err
	}
	merges, err := readBounded(mergesPath, maxMergesBytes)
	if err != nil {
		return nil, err
	}
	return Parse(vocabPath, vocab, mergesPath, merges)
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a CLIP tokenizer file may have", path, st.Size(), limit)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Parse builds a tokenizer from the contents of vocab.json and merges.txt
// (names are used in errors).
func Parse(vocabName string, vocab []byte, mergesName string, merges []byte) (*Tokenizer, error) {
	t := &Tokenizer{encoder: map[string]int{}, ranks: map[string]int{}}
	var raw map[string]int
	if err := json.Unmarshal(vocab, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of token ids: %v", vocabName, err)
	}
	if len(raw) > maxTokens {
		return nil, fmt.Errorf("%s: %d tokens, more than %d", vocabName, len(raw), maxTokens)
	}
	seen := make(map[int]string, len(raw))
	for tok, id := range raw {
		if id < 0 || id >= len(raw) {
			return nil, fmt.Errorf("%s: token %q has id %d, outside [0, %d)", vocabName, tok, id, len(raw))
		}
		if other, dup := seen[id]; dup {
			return nil, fmt.Errorf("%s: tokens %q and %q share id %d", vocabName, other, tok, id)
		}
		seen[id] = tok
		t.encoder[tok] = id
	}
	for b := range 256 {
		t.byteEnc[b] = string(byteRune(byte(b)))
		for _, tok := range []string{t.byteEnc[b], t.byteEnc[b] + "</w>"} {
			if _, ok := t.encoder[tok]; !ok {
				return nil, fmt.Errorf("%s: no token %q for byte 0x%02x: not a byte-level BPE vocabulary", vocabName, tok, b)
			}
		}
	}
	var ok bool
	if t.sot, ok = t.encoder[startToken]; !ok {
		return nil, fmt.Errorf("%s: no start token %q", vocabName, startToken)
	}
	if t.eot, ok = t.encoder[endToken]; !ok {
		return nil, fmt.Errorf("%s: no end token %q", vocabName, endToken)
	}
	sc := bufio.NewScanner(bytes.NewReader(merges))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	line, rank := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 && strings.HasPrefix(text, "#version") {
			continue
		}
		if text == "" {
			continue // the file's last line may be empty, as in open_clip's
		}
		parts := strings.Split(text, " ")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("%s:%d: merge %q is not two symbols separated by one space", mergesName, line, text)
		}
		if _, ok := t.encoder[parts[0]+parts[1]]; !ok {
			return nil, fmt.Errorf("%s:%d: merge %q makes %q, which is not in %s", mergesName, line, text, parts[0]+parts[1], vocabName)
		}
		t.ranks[text] = rank // a repeated merge takes its last rank, as dict(zip(merges, range(...))) does
		rank++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", mergesName, line+1, err)
	}
	return t, nil
}

// byteRune is bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the others for U+0100 onwards in byte order.
func byteRune(b byte) rune {
	if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
		return rune(b)
	}
	n := 0
	for c := 0; c < int(b); c++ {
		if !(c >= '!' && c <= '~' || c >= 0xa1 && c <= 0xac || c >= 0xae) {
			n++
		}
	}
	return rune(256 + n)
}

// VocabSize is the number of tokens of vocab.json.
func (t *Tokenizer) VocabSize() int { return len(t.encoder) }

// StartID and EndID are the ids of the start and end tokens.
func (t *Tokenizer) StartID() int { return t.sot }

// EndID is the id of the end token.
func (t *Tokenizer) EndID() int { return t.eot }

// Encode is SimpleTokenizer.encode: the BPE ids of Clean(text), without
// start and end tokens.
func (t *Tokenizer) Encode(text string) []int {
	var ids []int
	for _, w := range words(Clean(text)) {
		switch w {
		case startTokenText:
			ids = append(ids, t.sot)
			continue
		case endTokenText:
			ids = append(ids, t.eot)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(w); i++ {
			b.WriteString(t.byteEnc[w[i]])
		}
		for _, sym := range t.bpe(b.String()) {
			ids = append(ids, t.encoder[sym]) // every symbol is a byte or a merge result, checked by Parse
		}
	}
	return ids
}

// Tokenize is open_clip.tokenize for one text: the start token, Encode,
// the end token, cut to ContextLength with the end token kept last, and
// padded with zeros.
func (t *Tokenizer) Tokenize(text string) []int {
	ids := append([]int{t.sot}, t.Encode(text)...)
	ids = append(ids, t.eot)
	if len(ids) > ContextLength {
		ids = ids[:ContextLength]
		ids[ContextLength-1] = t.eot
	}
	out := make([]int, ContextLength)
	copy(out, ids)
	return out
}

// words is re.findall of SimpleTokenizer.pat on a cleaned text:
// <start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
// (the alternatives tried in order at each position).
func words(s string) []string {
	var out []string
	i := 0
next:
	for i < len(s) {
		rest := s[i:]
		for _, lit := range [...]string{startTokenText, endTokenText, "'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
			if strings.HasPrefix(rest, lit) {
				out = append(out, lit)
				i += len(lit)
				continue next
			}
		}
		r, n := utf8.DecodeRuneInString(rest)
		switch {
		case unicode.IsLetter(r):
			j := n
			for j < len(rest) {
				r2, m := utf8.DecodeRuneInString(rest[j:])
				if !unicode.IsLetter(r2) {
					break
				}
				j += m
			}
			out = append(out, rest[:j])
			i += j
		case unicode.IsNumber(r):
			out = append(out, rest[:n])
			i += n
		case isPySpace(r):
			i += n
		default:
			j := n
			for j < len(rest) {
				r2, m := utf8.DecodeRuneInString(rest[j:])
				if unicode.IsLetter(r2) || unicode.IsNumber(r2) || isPySpace(r2) {
					break
				}
				j += m
			}
			out = append(out, rest[:j])
			i += j
		}
	}
	return out
}

// bpe is SimpleTokenizer.bpe: the word's characters, the last one marked
// with "</w>", merged pair by pair, lowest rank first, every occurrence of
// the chosen pair at once from left to right.
func (t *Tokenizer) bpe(token string) []string {
	var word []string
	for _, r := range token {
		word = append(word, string(r))
	}
	if len(word) == 0 {
		return nil
	}
	word[len(word)-1] += "</w>"
	for len(word) > 1 {
		best, bestRank := "", -1
		for i := 0; i+1 < len(word); i++ {
			p := word[i] + " " + word[i+1]
			if r, ok := t.ranks[p]; ok && (bestRank < 0 || r < bestRank) {
				best, bestRank = p, r
			}
		}
		if bestRank < 0 {
			break
		}
		first, second, _ := strings.Cut(best, " ")
		merged := word[:0:0]
		for i := 0; i < len(word); {
			if i+1 < len(word) && word[i] == first && word[i+1] == second {
				merged = append(merged, first+second)
				i += 2
				continue
			}
			merged = append(merged, word[i])
			i++
		}
		word = merged
	}
	return word
}

// VocabFromMerges builds the vocabulary open_clip's SimpleTokenizer
// derives from its merges (the content of a merges.txt): the 256 byte
// characters in bytes_to_unicode order, the same with "</w>", each merge's
// result in rank order, then <|startoftext|> and <|endoftext|>. For the
// real merges this is vocab.json; tests use it to make small tokenizers.
func VocabFromMerges(merges []byte) map[string]int {
	var order []string
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ { // printable bytes first, then the rest, as bytes_to_unicode orders them
		if r := byteRune(byte(b)); r < 256 {
			order = append(order, string(r))
			seen[r] = true
		}
	}
	for b := 0; b < 256; b++ {
		if r := byteRune(byte(b)); !seen[r] {
			order = append(order, string(r))
		}
	}
	n := len(order)
	for i := 0; i < n; i++ {
		order = append(order, order[i]+"</w>")
	}
	for i, line := range strings.Split(string(merges), "\n") {
		if i == 0 && strings.HasPrefix(line, "#version") || line == "" {
			continue
		}
		order = append(order, strings.ReplaceAll(line, " ", ""))
	}
	order = append(order, startToken, endToken)
	vocab := make(map[string]int, len(order))
	for i, tok := range order {
		vocab[tok] = i
	}
	return vocab
}
