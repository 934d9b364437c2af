package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startKeepAlive serves a sim engine on a loopback port and returns its
// address; the server is shut down when the test ends.
func startKeepAlive(t *testing.T) (*Server, string) {
	t.Helper()
	return startKeepAliveConfig(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4})
}

func startKeepAliveConfig(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	return serveEngine(t, cfg, newSim(t))
}

const streamBody = `{"prompt":"the sun","max_tokens":5,"ignore_eos":true,"stream":true}`

// streamRequest is a raw streaming completion request with extra header
// lines (each ending in CRLF).
func streamRequest(proto, header string) string {
	return "POST /v1/completions " + proto + "\r\nHost: x\r\nContent-Type: application/json\r\n" + header +
		"Content-Length: " + strconv.Itoa(len(streamBody)) + "\r\n\r\n" + streamBody
}

// send dials addr and writes raw; the connection closes when the test
// ends.
func send(t *testing.T, addr, raw string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c
}

// A client that keeps its connection streams, then asks anything else, on
// the same connection.
func TestStreamKeepsTheConnection(t *testing.T) {
	_, addr := startKeepAlive(t)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	do := func(method, path, body string) string {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(httptrace.WithClientTrace(context.Background(), trace))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: read body: %v", method, path, err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: status %d: %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	for i := range 3 {
		if got := do("POST", "/v1/completions", streamBody); !strings.HasSuffix(got, "data: [DONE]\n\n") {
			t.Fatalf("stream %d ends %q", i, got[max(0, len(got)-40):])
		}
	}
	do("GET", "/health", "")
	do("POST", "/v1/completions", streamBody)
	want := []bool{false, true, true, true, true}
	if len(reused) != len(want) {
		t.Fatalf("connections got: %v", reused)
	}
	for i := range want {
		if reused[i] != want[i] {
			t.Fatalf("connection reused per request = %v, want %v", reused, want)
		}
	}
}

// Pipelined requests around streams (in the server's read buffer when a
// stream starts or ends) are answered in order.
func TestStreamThenPipelinedRequests(t *testing.T) {
	_, addr := startKeepAlive(t)
	stream := streamRequest("HTTP/1.1", "")
	models := "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
	// One write: a plain request, two streams and another plain request.
	c := send(t, addr, models+stream+stream+models)
	br := bufio.NewReader(c)
	for i, want := range []string{`"object":"list"`, "data: [DONE]", "data: [DONE]", `"object":"list"`} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("response %d body: %v", i, err)
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("response %d: status %d, body %q; want %q", i, resp.StatusCode, b, want)
		}
		if resp.Close {
			t.Fatalf("response %d closes the connection", i)
		}
	}
}

// A client that asks to close, or speaks HTTP/1.0, gets its stream and
// then the end of the connection; HTTP/1.0 gets no chunked framing.
func TestStreamClosesWhenAsked(t *testing.T) {
	_, addr := startKeepAlive(t)
	cases := []struct {
		name, proto, header string
		chunked             bool
	}{
		{"connection close", "HTTP/1.1", "Connection: close\r\n", true},
		{"http/1.0", "HTTP/1.0", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := send(t, addr, streamRequest(tc.proto, tc.header))
			all, err := io.ReadAll(c) // ends only if the server closes
			if err != nil {
				t.Fatal(err)
			}
			head, body, _ := strings.Cut(string(all), "\r\n\r\n")
			if !strings.Contains(head, "Connection: close") {
				t.Errorf("head has no Connection: close:\n%s", head)
			}
			if got := strings.Contains(head, "Transfer-Encoding: chunked"); got != tc.chunked {
				t.Errorf("chunked = %v, want %v:\n%s", got, tc.chunked, head)
			}
			if !tc.chunked && (!strings.HasPrefix(body, "data: {") || !strings.HasSuffix(body, "data: [DONE]\n\n")) {
				t.Errorf("unchunked body %q", body)
			}
		})
	}
}

// streamKept streams one completion on a new connection, requires the
// response to offer keep-alive, and returns the connection's reader.
func streamKept(t *testing.T, addr string) *bufio.Reader {
	t.Helper()
	br := bufio.NewReader(send(t, addr, streamRequest("HTTP/1.1", "")))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.Close {
		t.Fatal("the stream did not offer keep-alive")
	}
	return br
}

// Shutdown does not wait for a kept connection that sits idle.
func TestShutdownClosesKeptConnections(t *testing.T) {
	s, addr := startKeepAlive(t)
	br := streamKept(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an idle kept connection: %v", err)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("kept connection after shutdown: read %d bytes, err %v; want EOF", n, err)
	}
}

// A kept connection on which no request begins is closed after the
// unit's idle timeout.
func TestKeptConnectionIdleTimeout(t *testing.T) {
	_, addr := startKeepAliveConfig(t, Config{Model: "m", MaxConcurrency: 4, IdleTimeout: 50 * time.Millisecond})
	br := streamKept(t, addr)
	// send's 30 s deadline bounds this read.
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle kept connection: read %d bytes, err %v; want EOF", n, err)
	}
}
