package tasks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/backend"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// oracleServer is a real OpenAI-compatible HTTP server on 127.0.0.1 that
// answers each completions or chat request with reply(prompt), where the
// prompt is the request's prompt or its last user message. It is the
// scoring under test, not the server: an oracle that answers with the
// dataset's gold field must score 1 and a wrong one 0.
func oracleServer(t *testing.T, reply func(prompt string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt   string `json:"prompt"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		prompt := body.Prompt
		for _, m := range body.Messages {
			if m.Role != "user" {
				continue
			}
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				prompt = s
				continue
			}
			// Content parts: the text is the prompt; every image must be
			// a PNG data URL that decodes.
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			prompt = ""
			for _, p := range parts {
				switch p.Type {
				case "text":
					prompt += p.Text
				case "image_url":
					data, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/png;base64,")
					raw, err := base64.StdEncoding.DecodeString(data)
					if !ok || err != nil {
						http.Error(w, "image_url is not a PNG data URL", http.StatusBadRequest)
						return
					}
					if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
						http.Error(w, "image: "+err.Error(), http.StatusBadRequest)
						return
					}
				}
			}
		}
		text := reply(prompt)
		var out any
		if r.URL.Path == "/v1/chat/completions" {
			out = map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}}}}
		} else {
			out = map[string]any{"choices": []any{map[string]any{"text": text}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runOracle runs task against an oracle that answers every document's
// prompt with answer(doc), and returns the result's aggregate values.
func runOracle(t *testing.T, task *evalsuite.Task, api openai.API, answer func(evalsuite.Doc) string) map[string]float64 {
	t.Helper()
	byPrompt := map[string]string{}
	for _, d := range task.Docs {
		reqs, err := task.Requests(d)
		if err != nil {
			t.Fatalf("%s: %v", d.Source, err)
		}
		key := reqs[0].Context
		if api == openai.Chat {
			for _, m := range reqs[0].Messages {
				if m.Role == "user" {
					key = m.Content
				}
			}
		}
		byPrompt[key] = answer(d)
	}
	url := oracleServer(t, func(p string) string {
		if a, ok := byPrompt[p]; ok {
			return a
		}
		return "unknown prompt"
	})
	srv, err := openai.New(openai.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cl, err := backend.New(srv, backend.Config{Model: "oracle", API: api})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, cl, runner.Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Errored != 0 {
		t.Fatalf("%d errored samples: %v", res.Errors.Errored, res.Errors.Examples)
	}
	return aggregateKeys(res.Aggregates)
}

// checkOracle runs right and wrong oracles and checks key scores 1 and 0.
func checkOracle(t *testing.T, task *evalsuite.Task, api openai.API, key string, right, wrong func(evalsuite.Doc) string) {
	t.Helper()
	if got := runOracle(t, task, api, right); got[key] != 1 {
		t.Errorf("%s: the gold oracle scores %s = %v, want 1 (all: %v)", task.Name, key, got[key], got)
	}
	if got := runOracle(t, task, api, wrong); got[key] != 0 {
		t.Errorf("%s: the wrong oracle scores %s = %v, want 0 (all: %v)", task.Name, key, got[key], got)
	}
}

func field(d evalsuite.Doc, name string) string {
	s, err := d.Str(name)
	if err != nil {
		panic(err)
	}
	return s
}
