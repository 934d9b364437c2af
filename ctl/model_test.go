package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

func TestModelCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny-q8.gguf")
	out, code := runCtl(t, "model", "create", "--preset", "tiny", "--type", "q8_0", "--seed", "5", path)
	if code != 0 || !strings.Contains(out, "wrote "+path) || !strings.Contains(out, "q8_0 weights") {
		t.Fatalf("exit %d: %s", code, out)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _ := f.Uint("llama.block_count"); n != 2 {
		t.Errorf("block_count %d", n)
	}
	if ti, ok := f.Tensor("blk.0.attn_q.weight"); !ok || ti.Type != gguf.TypeQ8_0 {
		t.Errorf("attn_q: %+v", ti)
	}
	if out, code := runCtl(t, "model", "create", path); code != 1 || !strings.Contains(out, "exists") {
		t.Errorf("existing file: exit %d: %s", code, out)
	}
	if out, code := runCtl(t, "model", "create", "--force", path); code != 0 {
		t.Errorf("--force: exit %d: %s", code, out)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"model", "create"}, "want PATH"},
		{[]string{"model", "create", "--preset", "huge", filepath.Join(dir, "x")}, `unknown preset "huge"`},
		{[]string{"model", "create", "--type", "q4_1", filepath.Join(dir, "x")}, `unsupported weight type "q4_1"`},
		{[]string{"model", "create", filepath.Join(dir, "x"), "--seeds", "3"}, "flag provided but not defined: -seeds"},
	}
	for _, c := range cases {
		out, code := runCtl(t, c.args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q, want %q", c.args, code, out, c.want)
		}
	}
}

func TestModelInfo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	if out, code := runCtl(t, "model", "create", "--type", "q4_0", path); code != 0 {
		t.Fatalf("create: exit %d: %s", code, out)
	}
	out, code := runCtl(t, "model", "info", path)
	for _, want := range []string{"architecture  llama", "in 21 tensors (F32 5, Q4_0 16)",
		"kv cache      0.2 KiB per token (F16 keys and values on the cpu runtime); at most 4.0 MiB for 8 slots of 2048 tokens", "tokenizer     llama, 512 tokens, BOS 1, EOS [2]",
		"built-in llama2 format", "llama.block_count", `string[512] "<unk>" "<s>" "</s>"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	out, _, code = runCtlStdout(t, "-o", "json", "model", "info", path)
	var info modelInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != 0 {
		t.Fatalf("json output (exit %d): %v\n%s", code, err, out)
	}
	if kv := info.KVCache; kv == nil || *kv != (kvCacheInfo{Type: "f16", BytesPerToken: 256, Context: 2048, Slots: 8, MaxBytes: 4 << 20}) {
		t.Errorf("json kv_cache %+v", kv)
	}
	if out, code := runCtl(t, "model", "info", "--context", "128", "--slots", "2", path); code != 0 || !strings.Contains(out, "at most 64.0 KiB for 2 slots of 128 tokens") {
		t.Errorf("--context 128 --slots 2: exit %d:\n%s", code, out)
	}
	if out, code := runCtl(t, "model", "info", "--kv-type", "f32", path); code != 0 || !strings.Contains(out, "0.5 KiB per token (F32 keys and values on the cpu runtime); at most 8.0 MiB for 8 slots") {
		t.Errorf("--kv-type f32: exit %d:\n%s", code, out)
	}
	if out, code := runCtl(t, "model", "info", "--kv-type", "q8", path); code != 2 || !strings.Contains(out, "want f16 or f32") {
		t.Errorf("--kv-type q8: exit %d:\n%s", code, out)
	}
	if info.Architecture != "llama" || info.Tokenizer == nil || info.Tokenizer.Vocab != 512 || info.Metadata["llama.embedding_length"] != "64" {
		t.Errorf("json info %+v", info)
	}
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runCtl(t, "model", "info", bad); code != 1 || !strings.Contains(out, bad) {
		t.Errorf("bad file: exit %d: %s", code, out)
	}
}

// TestModelCreateFallbacks checks that matrices stored in another type
// than --type (llama-quantize's fallbacks) are reported, as text and JSON.
func TestModelCreateFallbacks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny-q4k.gguf")
	out, code := runCtl(t, "model", "create", "--preset", "tiny", "--type", "q4_k", path)
	for _, want := range []string{"fallback: 16 of 16 matrices are not stored as Q4_K", "Q5_0 for rows of 64: token_embd.weight, output.weight, blk.*.attn_q.weight",
		"Q5_0 for rows of 128: blk.*.ffn_down.weight"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if out, code := runCtl(t, "model", "create", "--force", "--type", "q8_0", path); code != 0 || strings.Contains(out, "fallback") {
		t.Errorf("q8_0 (no fallback): exit %d: %s", code, out)
	}
	js, _, code := runCtlStdout(t, "-o", "json", "model", "create", "--force", "--type", "q6_k", path)
	var created createdModel
	if err := json.Unmarshal([]byte(js), &created); err != nil || code != 0 {
		t.Fatalf("json output (exit %d): %v\n%s", code, err, js)
	}
	if created.Matrices != 16 || len(created.Fallbacks) != 16 || created.Fallbacks[0] != (createdFallback{Tensor: "token_embd.weight", Cols: 64, Type: "Q8_0"}) {
		t.Errorf("json %+v", created)
	}
}
