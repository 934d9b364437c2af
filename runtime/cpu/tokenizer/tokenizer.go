// Package tokenizer implements the tokenizers GGUF files describe in their
// tokenizer.ggml.* metadata: SentencePiece-style BPE by scores ("llama") and
// GPT-2 byte-level BPE by merge ranks ("gpt2"), with special tokens matched
// verbatim in the input, plus chat prompt rendering from
// tokenizer.chat_template. A Tokenizer implements runtime.Tokenizer.
package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// TokenType is the tokenizer.ggml.token_type of a token (the SentencePiece
// piece types).
type TokenType int32

// Token types as GGUF stores them.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Model is the tokenizer algorithm (tokenizer.ggml.model).
type Model string

// Supported tokenizer models.
const (
	// ModelSPM is SentencePiece BPE: merges chosen by token score, spaces
	// as "▁", byte fallback tokens <0xNN>.
	ModelSPM Model = "llama"
	// ModelGPT2 is byte-level BPE: bytes mapped to printable characters,
	// merges chosen by rank, text pre-split by a regular expression.
	ModelGPT2 Model = "gpt2"
)

// Tokenizer converts text to token ids and back for one vocabulary. It is
// immutable after New and safe for concurrent use.
type Tokenizer struct {
	model  Model
	pre    string
	tokens []string
	scores []float32
	types  []TokenType
	index  map[string]int

	bos, eos, unk  int // -1 when the vocabulary has none
	addBOS, addEOS bool
	addSpacePrefix bool
	eog            []int
	// maxTokenBytes bounds the input one token consumes (MaxTokenBytes).
	maxTokenBytes int

	// specials are the control, user-defined and unknown tokens matched
	// verbatim in input text (as llama.cpp parses them), bucketed by first
	// byte, longest first.
	specials [256][]special
	// byteToken maps a byte to its <0xNN> token for SentencePiece byte
	// fallback, -1 when absent.
	byteToken [256]int

	// GPT-2 byte-level BPE state.
	ranks    map[[2]string]int
	splitter *regexp2.Regexp

	chat *chatTemplate
}

type special struct {
	text string
	id   int
}

var (
	_ runtime.Tokenizer   = (*Tokenizer)(nil)
	_ runtime.TextBounder = (*Tokenizer)(nil)
)

// New builds the tokenizer a GGUF file describes. It refuses unknown
// tokenizer models and pre-tokenizers, and vocabularies whose arrays
// disagree in length or whose special token ids are out of range.
func New(f *gguf.File) (*Tokenizer, error) { return NewWithOptions(f, Options{}) }

// Options adjust what New builds.
type Options struct {
	// Now is the clock chat templates read through strftime_now
	// (time.Now when nil).
	Now func() time.Time
}

// NewWithOptions is New with options.
func NewWithOptions(f *gguf.File, opts Options) (*Tokenizer, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t, err := newTokenizer(f, opts)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func newTokenizer(f *gguf.File, opts Options) (*Tokenizer, error) {
	model, err := f.RequireString("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{model: Model(model), bos: -1, eos: -1, unk: -1}
	switch t.model {
	case ModelSPM:
		t.addBOS, t.addSpacePrefix = true, true
	case ModelGPT2:
	default:
		return nil, fmt.Errorf("unsupported tokenizer.ggml.model %q (supported: %q, %q)", model, ModelSPM, ModelGPT2)
	}
	if t.tokens, err = f.RequireStrings("tokenizer.ggml.tokens"); err != nil {
		return nil, err
	}
	n := len(t.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer.ggml.tokens is empty")
	}
	if scores, ok := f.Floats("tokenizer.ggml.scores"); ok {
		if len(scores) != n {
			return nil, fmt.Errorf("tokenizer.ggml.scores has %d entries for %d tokens", len(scores), n)
		}
		t.scores = scores
	} else if _, present := f.Value("tokenizer.ggml.scores"); present {
		return nil, fmt.Errorf("tokenizer.ggml.scores is not a float array")
	} else {
		t.scores = make([]float32, n)
	}
	t.types = make([]TokenType, n)
	if types, ok := f.Ints("tokenizer.ggml.token_type"); ok {
		if len(types) != n {
			return nil, fmt.Errorf("tokenizer.ggml.token_type has %d entries for %d tokens", len(types), n)
		}
		for i, ty := range types {
			if ty < int(TypeUndefined) || ty > int(TypeByte) {
				return nil, fmt.Errorf("tokenizer.ggml.token_type[%d] = %d is not a known token type", i, ty)
			}
			t.types[i] = TokenType(ty)
		}
	} else if _, present := f.Value("tokenizer.ggml.token_type"); present {
		return nil, fmt.Errorf("tokenizer.ggml.token_type is not an integer array")
	} else {
		for i := range t.types {
			t.types[i] = TypeNormal
		}
	}
	t.index = make(map[string]int, n)
	for i, tok := range t.tokens {
		// The first id wins for duplicated strings, as in the source vocab.
		if _, dup := t.index[tok]; !dup {
			t.index[tok] = i
		}
	}
	ids := []struct {
		key string
		dst *int
	}{
		{"tokenizer.ggml.bos_token_id", &t.bos},
		{"tokenizer.ggml.eos_token_id", &t.eos},
		{"tokenizer.ggml.unknown_token_id", &t.unk},
	}
	for _, e := range ids {
		if err := optionalID(f, e.key, n, e.dst); err != nil {
			return nil, err
		}
	}
	if pre, _ := f.String("tokenizer.ggml.pre"); t.model == ModelGPT2 && t.bos >= 0 && (pre == "llama3" || pre == "llama-bpe") {
		// Llama 3 expects <|begin_of_text|> even when the file does not
		// say so; other byte-level vocabularies add nothing by default.
		t.addBOS = true
	}
	if t.unk < 0 && t.model == ModelSPM {
		if id, ok := t.index["<unk>"]; ok {
			t.unk = id
		}
	}
	for _, e := range []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_bos_token", &t.addBOS},
		{"tokenizer.ggml.add_eos_token", &t.addEOS},
		{"tokenizer.ggml.add_space_prefix", &t.addSpacePrefix},
	} {
		if v, present := f.Value(e.key); present {
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%s holds %T, want bool", e.key, v)
			}
			*e.dst = b
		}
	}
	if t.addBOS && t.bos < 0 {
		return nil, fmt.Errorf("tokenizer adds BOS but tokenizer.ggml.bos_token_id is missing")
	}
	if err := t.collectEOG(f); err != nil {
		return nil, err
	}
	t.collectSpecials()
	// A vocabulary string is never shorter than the input its token
	// consumes: "▁" (3 bytes) stands for a space, a GPT-2 character for
	// one byte, a special token for its own text. A character with no
	// piece and no byte fallback becomes the unknown token alone (4 bytes
	// of UTF-8 at most).
	t.maxTokenBytes = 4
	for _, tok := range t.tokens {
		t.maxTokenBytes = max(t.maxTokenBytes, len(tok))
	}
	for i := range t.byteToken {
		t.byteToken[i] = -1
	}
	for id, ty := range t.types {
		if ty != TypeByte {
			continue
		}
		if b, ok := parseByteToken(t.tokens[id]); ok {
			t.byteToken[b] = id
		}
	}
	if t.model == ModelGPT2 {
		if err := t.initGPT2(f); err != nil {
			return nil, err
		}
	}
	if err := t.initChat(f, opts.Now); err != nil {
		return nil, err
	}
	return t, nil
}

// optionalID reads a token id key; absent keys and the "none" marker
// (0xFFFFFFFF, -1) leave dst at -1.
func optionalID(f *gguf.File, key string, n int, dst *int) error {
	v, present := f.Value(key)
	if !present {
		return nil
	}
	switch x := v.(type) {
	case uint32:
		if x == 0xFFFFFFFF {
			return nil
		}
	case int32:
		if x == -1 {
			return nil
		}
	}
	id, ok := f.Uint(key)
	if !ok {
		return fmt.Errorf("%s holds %T %v, want a token id", key, v, v)
	}
	if id >= uint64(n) {
		return fmt.Errorf("%s = %d is outside the vocabulary of %d tokens", key, id, n)
	}
	*dst = int(id)
	return nil
}

// eogTexts are the end-of-turn markers of the common chat formats; a control
// token with one of these texts ends generation like EOS does, because chat
// models emit them instead of EOS at the end of an answer.
var eogTexts = []string{"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>", "<end_of_turn>", "</s>"}

func (t *Tokenizer) collectEOG(f *gguf.File) error {
	seen := map[int]bool{}
	add := func(id int) {
		if id >= 0 && !seen[id] {
			seen[id] = true
			t.eog = append(t.eog, id)
		}
	}
	add(t.eos)
	for _, key := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		id := -1
		if err := optionalID(f, key, len(t.tokens), &id); err != nil {
			return err
		}
		add(id)
	}
	for _, text := range eogTexts {
		if id, ok := t.index[text]; ok && t.types[id] == TypeControl {
			add(id)
		}
	}
	sort.Ints(t.eog)
	return nil
}

func (t *Tokenizer) collectSpecials() {
	for id, ty := range t.types {
		tok := t.tokens[id]
		if (ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown) && tok != "" {
			t.specials[tok[0]] = append(t.specials[tok[0]], special{tok, id})
		}
	}
	for i := range t.specials {
		bucket := t.specials[i]
		sort.SliceStable(bucket, func(a, b int) bool { return len(bucket[a].text) > len(bucket[b].text) })
	}
}

// parseByteToken parses "<0xNN>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(s[3:5]) {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			return 0, false
		}
		b = b<<4 | v
	}
	return b, true
}

// Model returns the tokenizer algorithm.
func (t *Tokenizer) Model() Model { return t.model }

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// MaxTokenBytes is the most bytes of input text one token of Encode's
// output consumes (runtime.TextBounder): the longest vocabulary string,
// and at least 4.
func (t *Tokenizer) MaxTokenBytes() int { return t.maxTokenBytes }

// EOS returns the ids that end generation: EOS, EOT/EOM and the end-of-turn
// control tokens of the common chat formats.
func (t *Tokenizer) EOS() []int { return append([]int(nil), t.eog...) }

// BOS returns the beginning-of-sequence id, or -1.
func (t *Tokenizer) BOS() int { return t.bos }

// Token returns the vocabulary string of id ("▁the", "<0x0A>", "Ġthe").
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) {
		return "", false
	}
	return t.tokens[id], true
}

// TokenID returns the id of a vocabulary string.
func (t *Tokenizer) TokenID(s string) (int, bool) {
	id, ok := t.index[s]
	return id, ok
}

// Type returns the token type of id.
func (t *Tokenizer) Type(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// IsSpecial reports whether id is a control token (BOS, EOS, chat markers)
// or the unknown token.
func (t *Tokenizer) IsSpecial(id int) bool {
	ty := t.Type(id)
	return ty == TypeControl || ty == TypeUnknown
}

// Encode tokenizes text. Control, user-defined and unknown tokens written
// verbatim in text become their ids ("<unk>" is the unknown token, not five
// characters). With addSpecial, BOS is prepended when the vocabulary asks for
// it and EOS appended when it asks for that; like llama.cpp (and Hugging Face
// tokenizers), a text that already starts with BOS then has two.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	frags := t.splitSpecials(text)
	ids := make([]int, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		ids = append(ids, t.bos)
	}
	var err error
	prevSpecial := true
	for _, fr := range frags {
		if fr.id >= 0 {
			ids = append(ids, fr.id)
			prevSpecial = true
			continue
		}
		switch t.model {
		case ModelSPM:
			ids, err = t.encodeSPM(ids, fr.text, prevSpecial && t.addSpacePrefix)
		default:
			ids, err = t.encodeGPT2(ids, fr.text)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		ids = append(ids, t.eos)
	}
	return ids, nil
}

// fragment is a piece of input text, or a special token when id >= 0.
type fragment struct {
	text string
	id   int
}

// splitSpecials cuts text at every verbatim occurrence of a special token,
// taking the longest match at each position.
func (t *Tokenizer) splitSpecials(text string) []fragment {
	var out []fragment
	start := 0
	for i := 0; i < len(text); {
		matched := -1
		bucket := t.specials[text[i]]
		for k, sp := range bucket {
			if strings.HasPrefix(text[i:], sp.text) {
				matched = k
				break
			}
		}
		if matched < 0 {
			i++
			continue
		}
		if start < i {
			out = append(out, fragment{text: text[start:i], id: -1})
		}
		sp := bucket[matched]
		out = append(out, fragment(sp))
		i += len(sp.text)
		start = i
	}
	if start < len(text) {
		out = append(out, fragment{text: text[start:], id: -1})
	}
	return out
}

// TokenBytes returns the bytes id stands for inside a longer text: "▁" is a
// space, a byte token is its byte, a GPT-2 token is unmapped to its bytes.
// Control tokens stand for no text and return nil; user-defined tokens return
// their text.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.tokens) {
		return nil
	}
	tok := t.tokens[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUnused:
		return nil
	case TypeUserDefined:
		return []byte(tok)
	case TypeByte:
		if b, ok := parseByteToken(tok); ok {
			return []byte{b}
		}
	}
	if t.model == ModelGPT2 {
		return unmapBytes(tok)
	}
	return []byte(strings.ReplaceAll(tok, spmSpace, " "))
}

// Decode turns ids back into text. Without skipSpecial, control tokens
// appear as their text. For SentencePiece vocabularies that add a dummy
// space prefix, the leading space of the first text token (after BOS) is
// removed, so Decode(Encode(s)) == s.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	var sb strings.Builder
	first := true
	for _, id := range ids {
		if id < 0 || id >= len(t.tokens) {
			continue
		}
		if t.IsSpecial(id) || t.types[id] == TypeUnused {
			if !skipSpecial {
				sb.WriteString(t.tokens[id])
			}
			// BOS keeps the next token in the leading position.
			first = first && id == t.bos
			continue
		}
		b := t.TokenBytes(id)
		if first && t.model == ModelSPM && t.addSpacePrefix && len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		first = false
		sb.Write(b)
	}
	return sb.String()
}
