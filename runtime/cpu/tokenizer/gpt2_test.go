package tokenizer

import (
	"reflect"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// gpt2Vocab is a byte-level BPE vocabulary worked out by hand: ids 0-255
// are the 256 byte characters in byte order, then the merge results, then
// three control tokens. The merge order is chosen so that rank, not
// position, decides: "hello" only becomes one token through ll, ell, hell.
func gpt2Vocab(pre string) []gguf.KV {
	tokens := make([]string, 0, 270)
	types := make([]int32, 0, 270)
	for b := 0; b < 256; b++ {
		tokens = append(tokens, string(byteRune[b]))
		types = append(types, 1)
	}
	merges := []string{"l l", "e ll", "h ell", "hell o", "Ġ t", "h e", "Ġt he"}
	for _, m := range []string{"ll", "ell", "hell", "hello", "Ġt", "he", "Ġthe"} {
		tokens = append(tokens, m)
		types = append(types, 1)
	}
	for _, s := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"} {
		tokens = append(tokens, s)
		types = append(types, 3)
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "qwen2"},
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: merges},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(263)},
	}
	if pre != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.pre", Value: pre})
	}
	return kv
}

func newGPT2(t testing.TB, pre string) *Tokenizer {
	t.Helper()
	tk, err := New(parseKV(t, gpt2Vocab(pre)))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestGPT2Encode(t *testing.T) {
	tk := newGPT2(t, "")
	cases := []struct {
		text string
		want []string
	}{
		// "hello": ll (rank 0), e+ll (1), h+ell (2), hell+o (3).
		// " the": Ġ+t (4), then h+e (5), then Ġt+he (6).
		{"hello the<|endoftext|> hello", []string{"hello", "Ġthe", "<|endoftext|>", "Ġ", "hello"}},
		// Without a leading space "the" gets only h+e.
		{"the", []string{"t", "he"}},
		// "lol" has no mergeable pair at all.
		{"lol", []string{"l", "o", "l"}},
		// Multi-byte UTF-8 becomes one token per byte here.
		{"é", []string{"Ã", "©"}},
		{"<|im_start|>user\nhello<|im_end|>", []string{"<|im_start|>", "u", "s", "e", "r", "Ċ", "hello", "<|im_end|>"}},
	}
	for _, c := range cases {
		ids, err := tk.Encode(c.text, true)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if got := pieces(tk, ids); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Encode(%q) = %q, want %q", c.text, got, c.want)
		}
		if got := tk.Decode(ids, false); got != c.text {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, got)
		}
	}
	ids, _ := tk.Encode("hello<|endoftext|>", false)
	if got := tk.Decode(ids, true); got != "hello" {
		t.Errorf("Decode skipping specials = %q", got)
	}
	if got := string(tk.TokenBytes(ids[0])) + string(tk.TokenBytes(ids[1])); got != "hello" {
		t.Errorf("TokenBytes = %q (control tokens stand for no text)", got)
	}
	if !reflect.DeepEqual(tk.EOS(), []int{263, 265}) {
		t.Errorf("EOS = %v, want <|endoftext|> and <|im_end|>", tk.EOS())
	}
}

func TestPreTokenizerSplits(t *testing.T) {
	text := "Hello world's 12345  ok\n\nyes I'M"
	cases := []struct {
		pre  string
		want []string
	}{
		{"", []string{"Hello", " world", "'s", " 12345", " ", " ok", "\n", "\n", "yes", " I", "'", "M"}},
		{"llama3", []string{"Hello", " world", "'s", " ", "123", "45", " ", " ok", "\n\n", "yes", " I", "'M"}},
		{"llama-bpe", []string{"Hello", " world", "'s", " ", "123", "45", " ", " ok", "\n\n", "yes", " I", "'M"}},
		{"qwen2", []string{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " ", " ok", "\n\n", "yes", " I", "'M"}},
	}
	for _, c := range cases {
		tk := newGPT2(t, c.pre)
		got, err := tk.split(text)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("pre %q: split = %q, want %q", c.pre, got, c.want)
		}
	}
	// Invalid UTF-8 is cut from the original bytes, not replaced.
	tk := newGPT2(t, "llama3")
	got, err := tk.split("a\xffb")
	if err != nil {
		t.Fatal(err)
	}
	if joined := got[0]; len(got) == 0 || joined[0] != 'a' {
		t.Fatalf("split = %q", got)
	}
	var all string
	for _, w := range got {
		all += w
	}
	if all != "a\xffb" {
		t.Errorf("split lost bytes: %q", got)
	}
}

func TestByteMapping(t *testing.T) {
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := byteRune[b]
		if seen[r] {
			t.Fatalf("rune %U used twice", r)
		}
		seen[r] = true
		if runeByte[r] != byte(b) {
			t.Fatalf("byte %d does not round-trip", b)
		}
	}
	if byteRune[' '] != 'Ġ' || byteRune['\n'] != 'Ċ' || byteRune['a'] != 'a' {
		t.Errorf("space maps to %q, newline to %q", byteRune[' '], byteRune['\n'])
	}
}
