package tokenizer

import (
	"bytes"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// FuzzNew feeds arbitrary GGUF bytes to New and the tokenizer it builds:
// hostile vocabularies must give errors, never panics.
func FuzzNew(f *testing.F) {
	for _, kv := range [][]gguf.KV{spmVocab(), gpt2Vocab("llama3"), llama3Vocab(), mistralVocab()} {
		var buf bytes.Buffer
		if err := gguf.Write(&buf, kv, nil); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), "Hello <s> world<|eot_id|> 123")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		tk, err := New(file)
		if err != nil {
			return
		}
		ids, err := tk.Encode(text, true)
		if err != nil {
			return
		}
		for _, id := range ids {
			if id < 0 || id >= tk.VocabSize() {
				t.Fatalf("id %d outside the vocabulary of %d", id, tk.VocabSize())
			}
			_ = tk.TokenBytes(id)
		}
		_ = tk.Decode(ids, false)
		_, _ = tk.ChatPrompt([]runtime.ChatMessage{{Role: "user", Content: text}}, true)
	})
}

// FuzzChatTemplate renders arbitrary template sources: a template from a
// GGUF file must fail with an error, never a panic.
func FuzzChatTemplate(f *testing.F) {
	for _, s := range []string{chatMLTemplate, llama3Template, llama2Template, multilineTemplate, "{{ x", "{% for %}", "{{ raise_exception('no') }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, source string) {
		kv := append(spmVocab(), gguf.KV{Key: "tokenizer.chat_template", Value: source})
		var buf bytes.Buffer
		if err := gguf.Write(&buf, kv, nil); err != nil {
			t.Fatal(err)
		}
		file, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		tk, err := New(file)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = tk.ChatPrompt(conversation, true)
	})
}
