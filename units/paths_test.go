package units

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestAbsoluteTextMeansTheSame reads a unit whose paths are relative, moves
// its AbsoluteText to another folder and reads it there: every path Parse
// resolves must come out the same.
func TestAbsoluteTextMeansTheSame(t *testing.T) {
	root := t.TempDir()
	units, elsewhere := filepath.Join(root, "units"), filepath.Join(root, "snapshots")
	for _, d := range []string{units, elsewhere, filepath.Join(units, "models"), filepath.Join(units, "weights")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(units, "secret"), "0123456789abcdef0123456789abcdef\n", 0o600)
	writeFile(t, filepath.Join(units, "hf-token"), "hf_x\n", 0o600)
	writeFile(t, filepath.Join(units, "models", "tiny.gguf"), "GGUF", 0o644)
	for name, text := range map[string]string{
		"cpu": `model = "models/tiny.gguf"
device = "cpu"
listen = "127.0.0.1:8100"
[auth]
mode = "api-key"
secret_file = "secret"
[evals]
datasets = { gsm8k = "data/gsm8k.jsonl", mmlu = "/abs/mmlu.jsonl" }
`,
		"vllm": `model = "Llama-3.1-8B-Instruct"
device = "n300"
chips = [0, 1]
listen = "127.0.0.1:8102"
[vllm]
weights_dir = "weights"
cache_dir = "cache"
hf_token_file = "hf-token"
`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(units, name+Ext)
			u, err := Parse(name, path, []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			out, err := u.AbsoluteText([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			moved, err := Parse(name, filepath.Join(elsewhere, name+Ext), out)
			if err != nil {
				t.Fatalf("the text read from another folder: %v\n%s", err, out)
			}
			if moved.Model != u.Model || moved.Auth != u.Auth || !reflect.DeepEqual(moved.Evals, u.Evals) ||
				moved.Vllm.WeightsDir != u.Vllm.WeightsDir || moved.Vllm.CacheDir != u.Vllm.CacheDir || moved.Vllm.HFTokenFile != u.Vllm.HFTokenFile {
				t.Errorf("read from another folder:\n%+v\nwant\n%+v", moved, u)
			}
		})
	}
}

// TestAbsoluteTextVerbatim: a text without relative paths is the same
// bytes, comments and all; a catalog model name is not a path.
func TestAbsoluteTextVerbatim(t *testing.T) {
	data := []byte("# a comment survives\nmodel = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\n[auth]\nsecret_file = \"/abs/key\"\n")
	u := &Unit{Name: "s", Path: "/u/s.toml", Runtime: RuntimeSim}
	out, err := u.AbsoluteText(data)
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("changed a text without relative paths: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}
