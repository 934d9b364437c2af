package synth

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/tokenizer"
)

func TestCreateTiny(t *testing.T) {
	p, err := LookupPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K} {
		t.Run(typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tiny.gguf")
			if err := Create(path, Options{Preset: "tiny", Type: typ, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Architecture() != "llama" {
				t.Errorf("architecture %q", f.Architecture())
			}
			wantUint := map[string]uint64{
				"llama.context_length": uint64(p.Context), "llama.embedding_length": uint64(p.Dim),
				"llama.block_count": uint64(p.Layers), "llama.feed_forward_length": uint64(p.FFN),
				"llama.attention.head_count": uint64(p.Heads), "llama.attention.head_count_kv": uint64(p.KVHeads),
				"llama.rope.dimension_count": uint64(p.Dim / p.Heads), "general.file_type": uint64(fileTypes[typ]),
				"tokenizer.ggml.bos_token_id": BOSID, "tokenizer.ggml.eos_token_id": EOSID,
			}
			for k, v := range wantUint {
				if got, ok := f.Uint(k); !ok || got != v {
					t.Errorf("%s = %d (ok %v), want %d", k, got, ok, v)
				}
			}
			if eps, _ := f.Float("llama.attention.layer_norm_rms_epsilon"); math.Abs(eps-1e-5) > 1e-9 {
				t.Errorf("rms epsilon %v", eps)
			}
			if theta, _ := f.Float("llama.rope.freq_base"); theta != 10000 {
				t.Errorf("rope theta %v", theta)
			}
			if len(f.Tensors) != 3+9*p.Layers {
				t.Errorf("%d tensors, want %d", len(f.Tensors), 3+9*p.Layers)
			}
			kvDim := p.Dim / p.Heads * p.KVHeads
			shapes := map[string][]int{
				"token_embd.weight": {p.Dim, p.Vocab}, "output.weight": {p.Dim, p.Vocab}, "output_norm.weight": {p.Dim},
				"blk.1.attn_norm.weight": {p.Dim}, "blk.1.attn_q.weight": {p.Dim, p.Dim},
				"blk.1.attn_k.weight": {p.Dim, kvDim}, "blk.1.attn_v.weight": {p.Dim, kvDim},
				"blk.1.attn_output.weight": {p.Dim, p.Dim}, "blk.1.ffn_norm.weight": {p.Dim},
				"blk.1.ffn_gate.weight": {p.Dim, p.FFN}, "blk.1.ffn_up.weight": {p.Dim, p.FFN},
				"blk.1.ffn_down.weight": {p.FFN, p.Dim},
			}
			for name, dims := range shapes {
				ti, ok := f.Tensor(name)
				if !ok {
					t.Fatalf("tensor %s missing", name)
				}
				if len(ti.Dims) != len(dims) || ti.Dims[0] != dims[0] || (len(dims) > 1 && ti.Dims[1] != dims[1]) {
					t.Errorf("%s dims %v, want %v", name, ti.Dims, dims)
				}
				want := typ
				if len(dims) == 1 {
					want = gguf.TypeF32
				} else if dims[0]%typ.BlockSize() != 0 {
					want = FallbackType(typ, dims[0]) // rows of 64 are no whole K-quant block
				}
				if ti.Type != want {
					t.Errorf("%s type %s, want %s", name, ti.Type, want)
				}
			}
			tk, err := tokenizer.New(f)
			if err != nil {
				t.Fatal(err)
			}
			if tk.VocabSize() != p.Vocab {
				t.Errorf("vocab %d", tk.VocabSize())
			}
			const prompt = "Once upon a time, there was a little girl named Lily. ¡Olé!"
			ids, err := tk.Encode(prompt, true)
			if err != nil {
				t.Fatal(err)
			}
			if ids[0] != BOSID || tk.Decode(ids, true) != prompt {
				t.Errorf("round trip: %v -> %q", ids, tk.Decode(ids, true))
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	write := func(seed uint64) []byte {
		var buf bytes.Buffer
		if err := Write(&buf, Options{Preset: "tiny", Type: gguf.TypeQ8_0, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b, c := write(1), write(1), write(2)
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same file")
	}
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func TestWeightStatistics(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Options{Preset: "tiny", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		std  float64
	}{
		{"token_embd.weight", 0.02},
		{"blk.0.attn_q.weight", 0.02},
		{"blk.1.ffn_down.weight", 0.01}, // 0.02/sqrt(2*2 layers)
	}
	for _, c := range cases {
		ti, _ := f.Tensor(c.name)
		var sum, sq float64
		vals := f32s(ti.Data)
		for _, v := range vals {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		mean := sum / float64(len(vals))
		std := math.Sqrt(sq/float64(len(vals)) - mean*mean)
		if math.Abs(mean) > c.std/5 || math.Abs(std-c.std) > c.std/10 {
			t.Errorf("%s: mean %.5f std %.5f, want about 0 and %.3f", c.name, mean, std, c.std)
		}
	}
	ti, _ := f.Tensor("blk.0.ffn_norm.weight")
	for _, v := range f32s(ti.Data) {
		if v != 1 {
			t.Fatalf("norm weight %v, want 1", v)
		}
	}
}

func TestVocabulary(t *testing.T) {
	v, err := NewVocabulary(32000)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 32000 || len(v.Scores) != 32000 || len(v.Types) != 32000 {
		t.Fatalf("lengths %d %d %d", len(v.Tokens), len(v.Scores), len(v.Types))
	}
	if v.Tokens[UnkID] != "<unk>" || v.Tokens[BOSID] != "<s>" || v.Tokens[EOSID] != "</s>" || v.Tokens[3] != "<0x00>" || v.Tokens[258] != "<0xFF>" {
		t.Error("specials and byte tokens are not in place")
	}
	seen := map[string]bool{}
	for i, tok := range v.Tokens {
		if seen[tok] {
			t.Fatalf("token %q repeated", tok)
		}
		seen[tok] = true
		if i > minVocab && v.Scores[i] >= v.Scores[i-1] {
			t.Fatalf("scores do not fall at %d", i)
		}
	}
	small, err := NewVocabulary(300)
	if err != nil || len(small.Tokens) != 300 {
		t.Fatalf("vocabulary 300: %v", err)
	}
	if _, err := NewVocabulary(100); err == nil {
		t.Error("a vocabulary without room for the byte tokens was accepted")
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Preset: "huge"}, `unknown preset "huge"`},
		{Options{Preset: "tiny", Type: gguf.TypeQ4_1}, "unsupported weight type Q4_1"},
		{Options{Shape: Preset{Name: "odd", Dim: 60, Layers: 1, Heads: 7, KVHeads: 7, FFN: 64, Vocab: 300, Context: 64}}, "heads"},
		{Options{Shape: Preset{Name: "gqa", Dim: 64, Layers: 1, Heads: 4, KVHeads: 3, FFN: 64, Vocab: 300, Context: 64}}, "KV heads"},
	}
	for _, c := range cases {
		err := Create(filepath.Join(dir, "m.gguf"), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("failed creates left %d files behind", len(entries))
	}
	if err := Create(filepath.Join(dir, "missing", "m.gguf"), Options{Preset: "tiny"}); err == nil {
		t.Error("create in a missing directory succeeded")
	}
	if typ, err := ParseType("q8_0"); err != nil || typ != gguf.TypeQ8_0 {
		t.Errorf("ParseType(q8_0) = %v %v", typ, err)
	}
	if _, err := ParseType("q4_1"); err == nil || !strings.Contains(err.Error(), "f32") {
		t.Errorf("ParseType(q4_1): %v", err)
	}
}

func BenchmarkWrite24M(b *testing.B) {
	p, _ := LookupPreset("24m")
	b.SetBytes(p.Params() * 4)
	for i := 0; i < b.N; i++ {
		if err := Write(io.Discard, Options{Preset: "24m", Seed: uint64(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFallbackType checks llama-quantize's fallbacks for rows that are not
// a whole number of blocks (llama.cpp src/llama-quant.cpp,
// convert_incompatible_tensor).
func TestFallbackType(t *testing.T) {
	cases := []struct {
		want gguf.TensorType
		cols int
		got  gguf.TensorType
	}{
		{gguf.TypeQ4_K, 256, gguf.TypeQ4_K},
		{gguf.TypeQ4_K, 288, gguf.TypeQ5_0},
		{gguf.TypeQ5_K, 288, gguf.TypeQ5_1},
		{gguf.TypeQ6_K, 288, gguf.TypeQ8_0},
		{gguf.TypeQ4_K, 300, gguf.TypeF16}, // not a multiple of 32 either
		{gguf.TypeQ8_0, 288, gguf.TypeQ8_0},
		{gguf.TypeQ8_0, 100, gguf.TypeF16},
		{gguf.TypeF32, 7, gguf.TypeF32},
		{gguf.TypeF16, 7, gguf.TypeF16},
	}
	for _, c := range cases {
		if got := FallbackType(c.want, c.cols); got != c.got {
			t.Errorf("FallbackType(%s, %d) = %s, want %s", c.want, c.cols, got, c.got)
		}
	}
}

// TestFallbacksMatchFile writes the tiny preset (dim 64, ffn 128: no row is
// a multiple of 256) as Q4_K and checks that the file's types are the ones
// Fallbacks reports, and that the 24m preset's only Q4_K matrices are the
// ffn_down ones (768 columns).
func TestFallbacksMatchFile(t *testing.T) {
	opts := Options{Preset: "tiny", Type: gguf.TypeQ4_K, Seed: 1}
	fb, matrices, err := Fallbacks(opts)
	if err != nil {
		t.Fatal(err)
	}
	if matrices != 2+2*7 || len(fb) != matrices {
		t.Fatalf("tiny q4_k: %d fallbacks of %d matrices, want all of 16", len(fb), matrices)
	}
	path := filepath.Join(t.TempDir(), "tiny-q4k.gguf")
	if err := Create(path, opts); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range fb {
		ti, ok := f.Tensor(b.Tensor)
		if !ok || ti.Type != b.Got || b.Got != gguf.TypeQ5_0 || b.Want != gguf.TypeQ4_K {
			t.Errorf("%s: file has %v, fallback says %s -> %s", b.Tensor, ti.Type, b.Want, b.Got)
		}
	}
	fb, matrices, err = Fallbacks(Options{Preset: "24m", Type: gguf.TypeQ4_K})
	if err != nil {
		t.Fatal(err)
	}
	if matrices != 2+6*7 || len(fb) != matrices-6 {
		t.Fatalf("24m q4_k: %d fallbacks of %d matrices, want all but the 6 ffn_down", len(fb), matrices)
	}
	for _, b := range fb {
		if strings.HasSuffix(b.Tensor, "ffn_down.weight") || b.Got != gguf.TypeQ5_0 || b.Cols != 288 {
			t.Errorf("24m q4_k fallback %+v", b)
		}
	}
	if _, _, err := Fallbacks(Options{Preset: "huge"}); err == nil {
		t.Error("unknown preset: no error")
	}
}

// Every preset's context holds the chat template it ships with, tools
// included, and a short exchange, with room left to answer: a newcomer's
// first tools call to `ttisctl model create`'s model must not be a 400.
// The tokenizer depends on the vocabulary alone, so each preset is written
// with its vocabulary and context and the smallest weights.
func TestPresetContextHoldsTheToolTemplate(t *testing.T) {
	tools := []runtime.Tool{
		{Name: "get_weather", Description: "Get the current weather in a given city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`)},
		{Name: "search", Description: "Search the web and return the top results",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"count":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`)},
	}
	msgs := []runtime.ChatMessage{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "What is the weather in Paris, and what is on there this weekend?"},
		{Role: "assistant", ToolCalls: []runtime.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: `{"temperature":18,"unit":"celsius","sky":"clear"}`},
	}
	const answer = 256
	for _, p := range Presets() {
		t.Run(p.Name, func(t *testing.T) {
			shape := Preset{Name: p.Name, Dim: 8, Layers: 1, Heads: 2, KVHeads: 1, FFN: 16, Vocab: p.Vocab, Context: p.Context, RopeTheta: p.RopeTheta, RMSEpsilon: p.RMSEpsilon}
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := Create(path, Options{Shape: shape}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := tokenizer.New(f)
			if err != nil {
				t.Fatal(err)
			}
			prompt, _, err := tok.ToolChatPrompt(msgs, tools, true)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := tok.Encode(prompt, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids)+answer > p.Context {
				t.Errorf("preset %s: context %d cannot hold a tools conversation of %d tokens and a %d-token answer", p.Name, p.Context, len(ids), answer)
			}
			t.Logf("preset %s: tools conversation %d of %d tokens", p.Name, len(ids), p.Context)
		})
	}
}
