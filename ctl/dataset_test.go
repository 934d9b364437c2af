package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "evalsuite", "tasks", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hubArgs point a command at the fake Hub and a private state folder
// (and at no daemon).
func hubArgs(fake *hubtest.Server, state string) []string {
	return []string{"--hf-endpoint", fake.URL, "--offline=false", "--state-dir", state, "--socket", filepath.Join(state, "no.sock"), "--no-progress"}
}

func TestDatasetPullListVerify(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: fixtureBytes(t, "math500_test.jsonl"), LFS: true}})
	fake.SetBranch("dataset", "google/IFEval", "main", []hubtest.File{{Path: "ifeval_input_data.jsonl", Content: fixtureBytes(t, "ifeval.jsonl")}})
	state := t.TempDir()
	args := hubArgs(fake, state)

	stdout, stderr, code := runCtlStdout(t, append([]string{"dataset", "pull", "r1_math500", "ifeval", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("pull: exit %d\n%s%s", code, stdout, stderr)
	}
	var pulled []struct {
		Task   string `json:"task"`
		Splits []struct {
			Repo   string `json:"repo"`
			Commit string `json:"commit"`
			Path   string `json:"path"`
			Files  []struct {
				Digest string `json:"digest"`
			} `json:"files"`
		} `json:"splits"`
	}
	if err := json.Unmarshal([]byte(stdout), &pulled); err != nil || len(pulled) != 2 || pulled[0].Splits[0].Commit == "" {
		t.Fatalf("pull -o json: %v\n%s", err, stdout)
	}
	if !strings.HasPrefix(pulled[0].Splits[0].Files[0].Digest, "sha256:") || !strings.Contains(stderr, "fetched datasets/google/IFEval ifeval_input_data.jsonl") {
		t.Errorf("digest %q; stderr:\n%s", pulled[0].Splits[0].Files[0].Digest, stderr)
	}
	if _, err := os.Stat(pulled[0].Splits[0].Path); err != nil || !strings.HasPrefix(pulled[0].Splits[0].Path, filepath.Join(state, "hub")) {
		t.Errorf("pulled file %s: %v", pulled[0].Splits[0].Path, err)
	}

	stdout, _, code = runCtlStdout(t, append([]string{"dataset", "list", "r1_math500", "gsm8k", "-o", "json"}, args...)...)
	var listed []datasetStatus
	if code != 0 || json.Unmarshal([]byte(stdout), &listed) != nil || len(listed) != 3 {
		t.Fatalf("list: exit %d\n%s", code, stdout)
	}
	if !listed[0].Cached || listed[1].Cached || listed[1].Repo != "openai/gsm8k" || len(listed[1].Missing) == 0 {
		t.Errorf("list: %+v", listed)
	}
	out, code := runCtl(t, append([]string{"dataset", "list", "r1_math500"}, args...)...)
	if code != 0 || !strings.Contains(out, "HuggingFaceH4/MATH-500") || !strings.Contains(out, "yes (") {
		t.Errorf("list table: exit %d\n%s", code, out)
	}

	if out, code := runCtl(t, append([]string{"dataset", "verify", "r1_math500", "ifeval"}, args...)...); code != 0 || strings.Count(out, " ok") != 2 {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	// Without tasks, every split in the cache is checked; the others are
	// not errors.
	if out, code := runCtl(t, append([]string{"dataset", "verify"}, args...)...); code != 0 || strings.Count(out, " ok") != 2 {
		t.Errorf("verify everything: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(pulled[1].Splits[0].Path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runCtl(t, append([]string{"dataset", "verify", "ifeval"}, args...)...); code != exitError || !strings.Contains(out, "corrupt") || !strings.Contains(out, "ttisctl dataset pull ifeval") {
		t.Errorf("verify after tampering: exit %d\n%s", code, out)
	}

	// Offline, a pull of data not in the cache names what is missing.
	out, code = runCtl(t, append(append([]string{"dataset", "pull", "gsm8k"}, args...), "--offline")...)
	if code != exitError || !strings.Contains(out, "offline") || !strings.Contains(out, "openai/gsm8k") {
		t.Errorf("offline pull: exit %d\n%s", code, out)
	}
	if out, code := runCtl(t, append([]string{"dataset", "pull"}, args...)...); code != exitUsage {
		t.Errorf("pull without tasks: exit %d\n%s", code, out)
	}
}

func TestEvalPullsItsDataset(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: fixtureBytes(t, "math500_test.jsonl")}})
	srv := zeroServer(t)
	state := t.TempDir()
	out, code := runCtl(t, append([]string{"eval", "--url", srv.URL, "--task", "r1_math500", "--limit", "2"}, hubArgs(fake, state)...)...)
	if code != 0 || !strings.Contains(out, "r1_math500") {
		t.Fatalf("eval: exit %d\n%s", code, out)
	}
	matches, _ := filepath.Glob(filepath.Join(state, "runs", "*", "*", "evals", "datasets.json"))
	if len(matches) != 1 {
		t.Errorf("datasets.json: %v", matches)
	}
	// Offline with an empty cache: not measured, with the pull command.
	out, _ = runCtl(t, append(append([]string{"eval", "--url", srv.URL, "--task", "r1_math500", "--limit", "2"}, hubArgs(fake, state)...), "--offline", "--hub-cache", t.TempDir())...)
	if !strings.Contains(out, "ttisctl dataset pull r1_math500") {
		t.Errorf("offline eval:\n%s", out)
	}
}

func TestModelPull(t *testing.T) {
	fake := hubtest.New(t)
	repo := "meta-llama/Llama-3.1-8B-Instruct"
	fake.SetBranch("model", repo, "main", []hubtest.File{
		{Path: "config.json", Content: []byte(`{"model_type":"llama"}`)},
		{Path: "model-00001-of-00001.safetensors", Content: []byte(strings.Repeat("w", 5000)), LFS: true},
		{Path: "original/consolidated.00.pth", Content: []byte("pth"), LFS: true},
	})
	fake.Gate("model", repo, "hf_llama")
	state := t.TempDir()
	args := hubArgs(fake, state)
	out, code := runCtl(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct", "--exclude", "original"}, args...)...)
	if code != exitError || !strings.Contains(out, "gated") || !strings.Contains(out, "--hf-token-file") {
		t.Fatalf("gated without a token: exit %d\n%s", code, out)
	}
	tok := filepath.Join(state, "hf_token")
	if err := os.WriteFile(tok, []byte("hf_llama\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runCtl(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct", "--hf-token-file", tok}, args...)...); code != exitError || !strings.Contains(out, "chmod 600") {
		t.Fatalf("token file mode 0644: exit %d\n%s", code, out)
	}
	os.Chmod(tok, 0o600)
	stdout, stderr, code := runCtlStdout(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct", "--hf-token-file", tok}, args...)...)
	if code != 0 {
		t.Fatalf("pull: exit %d\n%s%s", code, stdout, stderr)
	}
	dir := strings.TrimSpace(stdout)
	if !strings.HasPrefix(dir, filepath.Join(state, "hub", "models--meta-llama--Llama-3.1-8B-Instruct", "snapshots")) {
		t.Fatalf("printed %q", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "model-00001-of-00001.safetensors")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "original")); err == nil {
		t.Error("original/ was pulled without --with-original")
	}
	stdout, _, code = runCtlStdout(t, append([]string{"model", "pull", "Llama-3.1-8B-Instruct", "--hf-token-file", tok, "--with-original", "-o", "json"}, args...)...)
	if code != 0 || !strings.Contains(stdout, `"path": "original/consolidated.00.pth"`) {
		t.Errorf("--with-original: exit %d\n%s", code, stdout)
	}
	if strings.Contains(stdout+stderr, "hf_llama") {
		t.Error("the token was printed")
	}
	if out, code := runCtl(t, append([]string{"model", "pull", "no-such-model"}, args...)...); code != exitError || !strings.Contains(out, "ORG/NAME") {
		t.Errorf("unknown model: exit %d\n%s", code, out)
	}
}
