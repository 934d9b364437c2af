package serve_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "script.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "openai-js", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
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
