package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigPrompts are request bodies just under the 8 MiB body limit whose
// prompts cannot fit any context window: a completion, a chat, a
// token-id prompt, a stream and a legacy request.
func bigPrompts(size int) map[string][]byte {
	text := make([]byte, size)
	x := uint32(1)
	for i := range text {
		x = x*1664525 + 1013904223
		text[i] = 'a' + byte(x>>24)%26 // about a token per byte
	}
	var ids bytes.Buffer
	ids.WriteString(`{"prompt":[300`)
	for ids.Len() < size {
		ids.WriteString(",300")
	}
	ids.WriteString(`],"max_tokens":4}`)
	return map[string][]byte{
		"/v1/completions":      fmt.Appendf(nil, `{"prompt":%q,"max_tokens":4}`, text),
		"/v1/chat/completions": fmt.Appendf(nil, `{"messages":[{"role":"user","content":%q}],"max_tokens":4}`, text),
		"ids":                  ids.Bytes(),
		"stream":               fmt.Appendf(nil, `{"prompt":%q,"max_tokens":4,"stream":true}`, text),
		"/inference/burst":     fmt.Appendf(nil, `{"text":%q,"max_tokens":4}`, text),
	}
}

// TestBigPromptBurst sends 40 concurrent 7.9 MB prompts that cannot fit
// to a real `ttisd serve` sim process: every one must be answered with
// its 400 (too long) or 429 (busy) (503 on the legacy route, its
// overload answer), the reading budget must drain, and the server must
// then serve as before. Its memory is sampled with a generous bound (the
// burst took 6.4 GB before admission came before work; `make soak`
// reports the figure).
func TestBigPromptBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 316 MB to a server process")
	}
	u := startUnit(t, 0.02, "[api]\nlegacy = true\nlegacy_route = \"/inference/burst\"\n")
	bodies := bigPrompts(7_900_000)
	kinds := []string{"/v1/completions", "/v1/chat/completions", "ids", "stream", "/inference/burst"}
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, rssOf(u.cmd.Process.Pid))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for i := range 40 {
		kind := kinds[i%len(kinds)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := kind
			switch kind {
			case "ids", "stream":
				path = "/v1/completions"
			}
			resp, err := http.Post(u.url+path, "application/json", bytes.NewReader(bodies[kind]))
			outcome := ""
			if err != nil {
				outcome = "lost: " + err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				outcome = classify(kind, resp.StatusCode, b)
			}
			mu.Lock()
			answers[outcome]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	for outcome, n := range answers {
		if !strings.HasPrefix(outcome, "ok ") {
			t.Errorf("%d requests: %s", n, outcome)
		}
	}
	t.Logf("answers %v; server peak RSS sampled %d MiB", answers, peak>>20)
	u.waitMetric("ttis:request_bytes_reading", 0, 5*time.Second)
	if peak > 2<<30 {
		t.Errorf("server RSS reached %d MiB during the burst, want well under 2 GiB", peak>>20)
	}
	var out struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	u.post("/v1/completions", `{"prompt":"the water","max_tokens":3}`, &out)
	if len(out.Choices) != 1 {
		t.Errorf("after the burst: %+v", out)
	}
}

// classify names an answer: "ok <status>" for a well-formed refusal the
// burst expects, else what was wrong with it.
func classify(kind string, code int, body []byte) string {
	if kind == "/inference/burst" {
		var e struct {
			Status  int    `json:"status_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &e) != nil || e.Status != code || e.Message == "" {
			return fmt.Sprintf("malformed legacy answer %d %.200s", code, body)
		}
		if code == 400 || code == 429 || code == 503 {
			return "ok " + strconv.Itoa(code)
		}
		return fmt.Sprintf("legacy %d %.200s", code, body)
	}
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code != code {
		return fmt.Sprintf("malformed answer %d %.200s", code, body)
	}
	if code == 400 || code == 429 {
		return "ok " + strconv.Itoa(code)
	}
	return fmt.Sprintf("%s: %d %.200s", kind, code, body)
}

// rssOf is a process's resident memory in bytes (0 where /proc cannot
// say).
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
