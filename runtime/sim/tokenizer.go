package sim

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// Token ids of the sim tokenizer. Ids 2..257 are the 256 byte-fallback
// tokens; word pieces follow.
const (
	bosID       = 0
	eosID       = 1
	firstByteID = 2
	firstWordID = firstByteID + 256
)

// Tokenizer is the sim runtime's tokenizer: greedy longest match over a
// vocabulary of word pieces (each word alone, with a leading space, and
// capitalised with a leading space) plus common punctuation, with a byte
// token for every byte no piece covers. Because every byte has a token and
// decoding concatenates token bytes, Decode(Encode(s)) == s for any input.
type Tokenizer struct {
	pieces   [][]byte       // id -> bytes (nil for specials)
	index    map[string]int // piece -> id
	maxPiece int
}

// newTokenizer builds the vocabulary from the built-in word list.
func newTokenizer() *Tokenizer {
	t := &Tokenizer{index: make(map[string]int)}
	t.pieces = append(t.pieces, nil, nil) // BOS, EOS
	for b := 0; b < 256; b++ {
		t.pieces = append(t.pieces, []byte{byte(b)})
	}
	add := func(p string) {
		if _, ok := t.index[p]; ok {
			return
		}
		t.index[p] = len(t.pieces)
		t.pieces = append(t.pieces, []byte(p))
		if len(p) > t.maxPiece {
			t.maxPiece = len(p)
		}
	}
	for _, p := range punctuation {
		add(p)
	}
	for _, w := range words {
		add(" " + w)
		add(w)
		add(" " + capitalise(w))
	}
	return t
}

func capitalise(w string) string {
	r := []rune(w)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// Encode tokenizes text by greedy longest match; addSpecial prepends BOS.
// Special-token names inside text are ordinary text.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	ids := make([]int, 0, len(text)/4+2)
	if addSpecial {
		ids = append(ids, bosID)
	}
	for i := 0; i < len(text); {
		n := min(t.maxPiece, len(text)-i)
		matched := false
		for ; n > 1; n-- {
			if id, ok := t.index[text[i:i+n]]; ok {
				ids = append(ids, id)
				i += n
				matched = true
				break
			}
		}
		if !matched {
			// Single characters: a one-byte piece if there is one, else
			// the byte token.
			if id, ok := t.index[text[i:i+1]]; ok {
				ids = append(ids, id)
			} else {
				ids = append(ids, firstByteID+int(text[i]))
			}
			i++
		}
	}
	return ids, nil
}

// Decode concatenates the tokens' bytes. Out-of-range ids decode to nothing;
// specials are written as <s> and </s> unless skipSpecial.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	var sb strings.Builder
	for _, id := range ids {
		switch {
		case id == bosID && !skipSpecial:
			sb.WriteString("<s>")
		case id == eosID && !skipSpecial:
			sb.WriteString("</s>")
		case id >= firstByteID && id < len(t.pieces):
			sb.Write(t.pieces[id])
		}
	}
	return sb.String()
}

// TokenBytes returns the bytes of one token (nil for specials and unknown ids).
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < firstByteID || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// IsSpecial reports whether id is BOS or EOS.
func (t *Tokenizer) IsSpecial(id int) bool { return id == bosID || id == eosID }

// EOS returns the end-of-sequence id.
func (t *Tokenizer) EOS() []int { return []int{eosID} }

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// MaxTokenBytes is the longest piece: no token of Encode's output covers
// more of its input (special-token names are ordinary text here).
func (t *Tokenizer) MaxTokenBytes() int { return max(t.maxPiece, 1) }

// ChatPrompt renders messages with the sim's plain-text chat template:
//
//	<|system|>\n…\n<|user|>\n…\n<|assistant|>\n
//
// Roles other than system, user and assistant are rejected.
func (t *Tokenizer) ChatPrompt(messages []runtime.ChatMessage, addGenerationPrompt bool) (string, error) {
	var sb strings.Builder
	for i, m := range messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return "", fmt.Errorf("messages[%d].role: unsupported role %q (want system, user or assistant)", i, m.Role)
		}
		sb.WriteString("<|")
		sb.WriteString(m.Role)
		sb.WriteString("|>\n")
		sb.WriteString(m.Content)
		sb.WriteString("\n")
	}
	if addGenerationPrompt {
		sb.WriteString("<|assistant|>\n")
	}
	return sb.String(), nil
}

var (
	_ runtime.Tokenizer   = (*Tokenizer)(nil)
	_ runtime.TextBounder = (*Tokenizer)(nil)
)

// ToolChatPrompt renders a conversation with tools: the sim's template
// has no tool format of its own, so tools are described in the system
// message and calls and results written in the hermes format.
func (t *Tokenizer) ToolChatPrompt(messages []runtime.ChatMessage, tools []runtime.Tool, addGenerationPrompt bool) (string, runtime.ToolSyntax, error) {
	p, err := t.ChatPrompt(toolcall.GenericMessages(messages, tools), addGenerationPrompt)
	return p, runtime.ToolHermes, err
}

var _ runtime.ToolPrompter = (*Tokenizer)(nil)
