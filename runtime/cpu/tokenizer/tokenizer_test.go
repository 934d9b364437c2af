package tokenizer

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// parseKV writes metadata with the gguf writer and parses it back, the way
// a tokenizer meets it in a model file.
func parseKV(t testing.TB, kv []gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// spmVocab is a small SentencePiece vocabulary: the three specials, all 256
// byte tokens, then a few pieces with scores.
func spmVocab(extra ...gguf.KV) []gguf.KV {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	pieces := []struct {
		s     string
		score float32
	}{
		{"▁", -5}, {"a", -6}, {"b", -6}, {"c", -6}, {"▁a", -1}, {"ab", -2}, {"▁ab", -0.5}, {"bc", -3},
		{"h", -6}, {"i", -6}, {"hi", -1.5}, {"▁hi", -1.2},
	}
	scores := make([]float32, len(tokens))
	for _, p := range pieces {
		tokens = append(tokens, p.s)
		scores = append(scores, p.score)
		types = append(types, 1)
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(0)},
	}
	return append(kv, extra...)
}

func newSPM(t testing.TB, extra ...gguf.KV) *Tokenizer {
	t.Helper()
	tk, err := New(parseKV(t, spmVocab(extra...)))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func pieces(tk *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = tk.Token(id)
	}
	return out
}

func TestSPMEncode(t *testing.T) {
	tk := newSPM(t)
	cases := []struct {
		text       string
		addSpecial bool
		want       []string
	}{
		// ▁a (-1) merges first, then ▁a+b = ▁ab (-0.5); "▁c" is no piece.
		{"ab c", true, []string{"<s>", "▁ab", "▁", "c"}},
		{"ab c", false, []string{"▁ab", "▁", "c"}},
		// "bc" (-3) loses to nothing else here: b and c merge.
		{"bc", false, []string{"▁", "bc"}},
		// hi (-1.5) merges before ▁h exists (no such piece); then ▁+hi.
		{"hi", false, []string{"▁hi"}},
		// é has no piece: UTF-8 byte fallback.
		{"é", false, []string{"▁", "<0xC3>", "<0xA9>"}},
		// Specials are matched verbatim; text after one gets the prefix.
		{"a</s>b", false, []string{"▁a", "</s>", "▁", "b"}},
		// Text that starts with BOS gets a second one, as in llama.cpp.
		{"<s>hi", true, []string{"<s>", "<s>", "▁hi"}},
		{"<s>hi", false, []string{"<s>", "▁hi"}},
		// The unknown token written in text is that token.
		{"a<unk>", false, []string{"▁a", "<unk>"}},
		{"", true, []string{"<s>"}},
	}
	for _, c := range cases {
		ids, err := tk.Encode(c.text, c.addSpecial)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if got := pieces(tk, ids); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Encode(%q, %v) = %q, want %q", c.text, c.addSpecial, got, c.want)
		}
	}
}

func TestSPMDecode(t *testing.T) {
	tk := newSPM(t)
	ids, _ := tk.Encode("ab c é", true)
	if got := tk.Decode(ids, true); got != "ab c é" {
		t.Errorf("Decode = %q", got)
	}
	if got := tk.Decode(ids, false); got != "<s>ab c é" {
		t.Errorf("Decode keeping specials = %q", got)
	}
	var raw []byte
	for _, id := range ids {
		raw = append(raw, tk.TokenBytes(id)...)
	}
	if string(raw) != " ab c é" {
		t.Errorf("TokenBytes concatenation = %q, want the leading space kept", raw)
	}
	if !tk.IsSpecial(1) || !tk.IsSpecial(2) || tk.IsSpecial(3) || tk.IsSpecial(300) {
		t.Error("IsSpecial wrong")
	}
	if tk.VocabSize() != 3+256+12 || !reflect.DeepEqual(tk.EOS(), []int{2}) {
		t.Errorf("VocabSize %d EOS %v", tk.VocabSize(), tk.EOS())
	}
	if tk.TokenBytes(-1) != nil || tk.TokenBytes(1<<20) != nil || tk.Decode([]int{-5, 1 << 20}, false) != "" {
		t.Error("out-of-range ids must be ignored")
	}
}

func TestSPMFlags(t *testing.T) {
	tk := newSPM(t,
		gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: false},
		gguf.KV{Key: "tokenizer.ggml.add_eos_token", Value: true},
		gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: false},
	)
	ids, err := tk.Encode("hi", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := pieces(tk, ids); !reflect.DeepEqual(got, []string{"hi", "</s>"}) {
		t.Errorf("got %q", got)
	}
}

func TestNewRejects(t *testing.T) {
	cases := []struct {
		name string
		kv   []gguf.KV
		want string
	}{
		{"no model", nil, `"tokenizer.ggml.model" is missing`},
		{"bert", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "bert"}}, `unsupported tokenizer.ggml.model "bert"`},
		{"no tokens", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "llama"}}, "tokenizer.ggml.tokens"},
		{"scores length", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a", "b"}},
			{Key: "tokenizer.ggml.scores", Value: []float32{1}},
		}, "scores has 1 entries for 2 tokens"},
		{"bad type", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
			{Key: "tokenizer.ggml.token_type", Value: []int32{9}},
		}, "token_type[0] = 9"},
		{"bos range", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
			{Key: "tokenizer.ggml.bos_token_id", Value: uint32(7)},
		}, "bos_token_id = 7 is outside"},
		{"no bos", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
		}, "bos_token_id is missing"},
		{"unknown pre", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
			{Key: "tokenizer.ggml.pre", Value: "deepseek-coder"},
		}, `unsupported tokenizer.ggml.pre "deepseek-coder"`},
		{"bad merge", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
			{Key: "tokenizer.ggml.merges", Value: []string{"ab"}},
		}, `merges[0] = "ab"`},
		{"template type", []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
			{Key: "tokenizer.ggml.merges", Value: []string{}}, {Key: "tokenizer.chat_template", Value: uint8(1)},
		}, "chat_template holds uint8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(parseKV(t, c.kv))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// sharedModel finds ../shared/models/name beside the module root, or
// skips the test.
func sharedModel(t testing.TB, name string) string {
	t.Helper()
	return testbin.Shared(t, "models/"+name)
}

func TestStories260K(t *testing.T) {
	f, err := gguf.Open(sharedModel(t, "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.Encode("Once upon a time", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 403, 407, 261, 378}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Encode = %v, want %v (llama.cpp reference)", ids, want)
	}
	for _, s := range []string{"Once upon a time", "Lily said: \"Hi!\"\n  She ran.", "日本 ñ ✓", " lead"} {
		ids, err := tk.Encode(s, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.Decode(ids, true); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
	}
	if tk.VocabSize() != 512 || tk.BOS() != 1 || !reflect.DeepEqual(tk.EOS(), []int{2}) {
		t.Errorf("vocab %d bos %d eos %v", tk.VocabSize(), tk.BOS(), tk.EOS())
	}
	ct := tk.ChatTemplate()
	if !ct.Builtin || ct.Family != FamilyLlama2 {
		t.Errorf("chat template %+v, want the built-in llama2 format", ct)
	}
}

func FuzzEncode(f *testing.F) {
	spm := newSPM(f)
	gpt := newGPT2(f, "llama3")
	for _, s := range []string{"", "ab c", "hello the world", "é日本\xff\xfe", "<s>x</s>", "<|endoftext|>  \n\n 123456 I'M", "\x00\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range []*Tokenizer{spm, gpt} {
			ids, err := tk.Encode(s, true)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", tk.Model(), s, err)
			}
			for _, id := range ids {
				if id < 0 || id >= tk.VocabSize() {
					t.Fatalf("id %d out of range", id)
				}
			}
			// The bound the server judges prompts by before tokenizing them.
			if per := tk.MaxTokenBytes(); len(ids) < (len(s)+per-1)/per {
				t.Fatalf("%s: %q (%d bytes) encodes to %d tokens, fewer than its length allows at %d bytes a token", tk.Model(), s, len(s), len(ids), per)
			}
			got := tk.Decode(ids, false)
			if !utf8.ValidString(s) {
				continue
			}
			if tk.Model() == ModelSPM && (strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") || strings.Contains(s, spmSpace)) {
				// SentencePiece adds a dummy space after a special token and
				// reads a literal "▁" back as a space.
				continue
			}
			if tk.Model() == ModelSPM {
				got = tk.Decode(ids, true)
			}
			if got != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", tk.Model(), s, got)
			}
		}
	})
}

// benchText is English prose with punctuation, digits and a little UTF-8.
var benchText = strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside in the park; "+
	"one day (it was 2024) she saw a big, red ball — and she wanted it! ", 40)

func BenchmarkEncodeSPM(b *testing.B) {
	f, err := gguf.Open(sharedModel(b, "stories260K-f32.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tk, err := New(f)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchText)))
	for i := 0; i < b.N; i++ {
		if _, err := tk.Encode(benchText, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeGPT2(b *testing.B) {
	tk := newGPT2(b, "llama3")
	b.SetBytes(int64(len(benchText)))
	for i := 0; i < b.N; i++ {
		if _, err := tk.Encode(benchText, true); err != nil {
			b.Fatal(err)
		}
	}
}
