//go:build soak

package soak_test

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
	"time"
)

// The big-prompt burst: 40 concurrent prompts of 7.9 MB (under the 8 MiB
// body limit), none of which can fit the context window, sent to the
// steady unit's server while the load runs. Admission comes before work,
// so every one must be answered 400 (too long) or 429 (busy), the server's
// memory must stay under 1 GiB and return near where it was, and the
// steady load must lose nothing (check counts that).
const (
	burstRequests  = 40
	burstBytes     = 7_900_000
	burstPeakLimit = 1 << 30
)

// burstBody is a completion whose prompt is burstBytes of random letters
// (about a token per byte), built once.
var burstBody = sync.OnceValue(func() []byte {
	text := make([]byte, burstBytes)
	x := uint32(1)
	for i := range text {
		x = x*1664525 + 1013904223
		text[i] = 'a' + byte(x>>24)%26
	}
	return fmt.Appendf(nil, `{"prompt":%q,"max_tokens":4}`, text)
})

func (s *soak) bigPromptBurst() (string, error) {
	u, err := s.unit(steady)
	if err != nil || u.PID == 0 {
		return "", fmt.Errorf("no steady server: %v", err)
	}
	pid, addr, body := u.PID, listenOf(s.texts[steady]), burstBody()
	before := serverRSS(pid)
	var peak int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, serverRSS(pid))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var mu sync.Mutex
	counts := map[int]int{}
	var other []string
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 2 * time.Minute}
	for range burstRequests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, detail := burstRequest(hc, addr, body)
			mu.Lock()
			defer mu.Unlock()
			if detail != "" {
				other = append(other, detail)
				return
			}
			counts[code]++
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	// The server hands memory back a quiet second after a burst; allow
	// for a loaded machine, then judge what it came back to.
	after := serverRSS(pid)
	for deadline := time.Now().Add(15 * time.Second); after > before+8<<20 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		after = serverRSS(pid)
	}
	outcome := fmt.Sprintf("%d prompts of %.1f MB: %d × 400, %d × 429, %d otherwise; server RSS %d → peak %d → %d MiB",
		burstRequests, float64(burstBytes)/1e6, counts[400], counts[429], len(other), before>>20, peak>>20, after>>20)
	switch {
	case len(other) > 0:
		return "", fmt.Errorf("%s; first: %s", outcome, other[0])
	case peak >= burstPeakLimit:
		return "", fmt.Errorf("%s: peak over %d MiB", outcome, burstPeakLimit>>20)
	case after > before+64<<20:
		return "", fmt.Errorf("%s: memory did not return within 64 MiB of where it was", outcome)
	}
	return outcome, nil
}

// burstRequest posts one big prompt; it returns the status of a
// well-formed 400 or 429, else a description of what came back.
func burstRequest(hc *http.Client, addr string, body []byte) (int, string) {
	resp, err := hc.Post("http://"+addr+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "lost: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" {
		return 0, fmt.Sprintf("malformed %d %.200q", resp.StatusCode, b)
	}
	if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusTooManyRequests {
		return 0, fmt.Sprintf("%d %.200s", resp.StatusCode, e.Error.Message)
	}
	return resp.StatusCode, ""
}

// serverRSS is a process's resident memory in bytes (0 if unknown).
func serverRSS(pid int) int64 {
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
