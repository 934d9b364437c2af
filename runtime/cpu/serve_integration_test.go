package cpu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// TestTtisdServesCPUUnit builds ttisd, serves a cpu unit with it and asks
// for a greedy completion over HTTP on loopback: the engine behind the real
// server. With the shared stories model the text must be llama.cpp's.
func TestTtisdServesCPUUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts ttisd; the engine tests cover the engine alone")
	}
	root := testbin.ModuleRoot(t)
	dir := t.TempDir()
	bin := testbin.Path(t, "ttisd", false)

	modelPath, want := filepath.Join(root, "..", "shared", "models", "stories260K-f32.gguf"), storiesText
	if _, err := os.Stat(modelPath); err != nil {
		modelPath, want = tinyModel(t), ""
	}
	addr := freeAddr(t)
	unit := filepath.Join(dir, "story.toml")
	toml := fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\nlisten = %q\n[cpu]\nthreads = 1\n", modelPath, addr)
	if err := os.WriteFile(unit, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, bin, "serve", "--log-level", "warn", "--model-dir", filepath.Dir(modelPath), unit)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}()

	base := "http://" + addr
	// No idle connections outlive the test (TestMain checks goroutines).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ttisd serve not ready after 60s: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	body := `{"model":"story","prompt":"Once upon a time","max_tokens":48,"temperature":0}`
	resp, err := client.Post(base+"/v1/completions", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: status %d, %v\n%s", resp.StatusCode, err, logs.String())
	}
	if len(out.Choices) != 1 || out.Choices[0].FinishReason != "length" || out.Usage.CompletionTokens != 48 || out.Usage.PromptTokens == 0 {
		t.Fatalf("completion %+v", out)
	}
	if want != "" && out.Choices[0].Text != want {
		t.Errorf("text\n got %q\nwant %q", out.Choices[0].Text, want)
	}
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
