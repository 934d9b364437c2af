package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// TestOpenAIJSSDK streams a chat completion and a completion from a sim unit
// with the official OpenAI JavaScript SDK (pinned in
// testdata/openai-js/package.json and package-lock.json), unchanged.
func TestOpenAIJSSDK(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node or npm is not installed; the OpenAI JS SDK check needs both")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := installOpenAIJS(ctx, t, npm)
	u := startUnit(t, 0, "")
	run := exec.CommandContext(ctx, node, "script.mjs", u.url)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node script.mjs: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Model     string `json:"model"`
		ChatText  string `json:"chatText"`
		ChatUsage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"chatUsage"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if res.Model != "Llama-3.1-8B-Instruct" || res.ChatText == "" || res.Text == "" || res.ChatUsage.CompletionTokens == 0 {
		t.Errorf("SDK results %+v", res)
	}
}

// installOpenAIJS copies the pinned SDK package into a temp dir and runs
// npm install there.
func installOpenAIJS(ctx context.Context, t *testing.T, npm string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "script.mjs", "structured.mjs", "media.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "openai-js", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	return dir
}

// TestOpenAIJSSDKStructured runs the SDK's structured-output parse helpers
// (a Zod schema, a JSON schema) and the tool-calling flow (strict tools,
// tool_choice required, the tool result sent back, a named function
// streamed) against a cpu unit serving the random-weight 24m model, with
// testdata/openai-js/structured.mjs.
func TestOpenAIJSSDKStructured(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node or npm is not installed; the OpenAI JS SDK check needs both")
	}
	if testing.Short() {
		t.Skip("generates on the 24m model")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := installOpenAIJS(ctx, t, npm)
	unitDir := t.TempDir()
	model := filepath.Join(unitDir, "random-24m.gguf")
	if err := synth.Create(model, synth.Options{Preset: "24m", Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	u := startUnitFile(t, filepath.Join(unitDir, "cpu-random.toml"), addr, fmt.Sprintf("model = %q\ndevice = \"cpu\"\nlisten = %q\n[cpu]\nthreads = 2\n", model, addr))
	run := exec.CommandContext(ctx, node, "structured.mjs", u.url)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node structured.mjs: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Model    string            `json:"model"`
		Weathers []json.RawMessage `json:"weathers"`
		Call     struct {
			Name string `json:"name"`
		} `json:"call"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if res.Model == "" || len(res.Weathers) != 3 || res.Call.Name != "get_weather" {
		t.Errorf("SDK results %s", lines[len(lines)-1])
	}
}

// TestOpenAIJSSDKMedia calls images.generate, audio.transcriptions.create
// (a file upload), audio.speech.create, embeddings.create and images.edit
// (an image and a mask uploaded) with the
// pinned SDK against sim media units (testdata/openai-js/media.mjs).
func TestOpenAIJSSDKMedia(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node or npm is not installed; the OpenAI JS SDK check needs both")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := installOpenAIJS(ctx, t, npm)
	var urls []string
	for _, m := range []struct{ model, device string }{
		{"stable-diffusion-xl-base-1.0", "n150"}, {"whisper-large-v3", "n150"}, {"speecht5_tts", "n150"}, {"Qwen3-Embedding-4B", "n150"},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "n150"},
	} {
		addr := freePort(t)
		u := startUnitFile(t, filepath.Join(t.TempDir(), "media.toml"), addr,
			fmt.Sprintf("model = %q\ndevice = %q\nruntime = \"sim\"\nlisten = %q\n[sim]\ntime_scale = 0\n", m.model, m.device, addr))
		urls = append(urls, u.url)
	}
	run := exec.CommandContext(ctx, node, append([]string{"media.mjs"}, urls...)...)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node media.mjs: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Edits         int     `json:"edits"`
		Images        int     `json:"images"`
		Transcript    string  `json:"transcript"`
		Segments      int     `json:"segments"`
		SpeechSeconds float64 `json:"speechSeconds"`
		Dims          int     `json:"dims"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if res.Edits != 1 || res.Images != 2 || res.Transcript == "" || res.Segments != 3 || res.SpeechSeconds < 1 || res.Dims != 2560 {
		t.Errorf("SDK results %s", lines[len(lines)-1])
	}
}
