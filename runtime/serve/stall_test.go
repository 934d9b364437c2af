package serve_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A streaming client that stops reading loses its slot once it has
// accepted nothing for limits.write_timeout, even while generation is
// slow: the kernel's socket buffers used to absorb the stream's writes for
// minutes (no write blocked, so no write deadline fired) while every other
// request waited. The next request is then served.
func TestStalledStreamFreesItsSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	// One slot; the simulated device decodes a few dozen tokens a second.
	u := startUnit(t, 1, "[limits]\nmax_concurrency = 1\nmax_queue = 4\nwrite_timeout = \"2s\"\nrequest_timeout = \"10m\"\n")
	addr := strings.TrimPrefix(u.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A small receive buffer, never read: the client's window closes
	// after a few kilobytes.
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"model":"Llama-3.1-8B-Instruct","prompt":"hello","max_tokens":5000,"ignore_eos":true,"stream":true}`
	req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(500 * time.Millisecond) // the stream holds the slot
	// The next request waits for the slot; it is served once the stalled
	// stream is dropped, long before its 5000 tokens would end.
	code, _, b := u.request("POST", "/v1/completions", `{"model":"Llama-3.1-8B-Instruct","prompt":"hi","max_tokens":2}`)
	took := time.Since(start)
	if code != 200 {
		t.Fatalf("second request: %d %s", code, b)
	}
	t.Logf("slot freed after %s", took)
	if took > 30*time.Second {
		t.Fatalf("the stalled stream held the slot for %s", took)
	}
}
