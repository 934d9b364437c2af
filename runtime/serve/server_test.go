package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/sim"
)

func newSim(t *testing.T) *sim.Engine { return newSimF(t) }

func newSimF(t testing.TB) *sim.Engine {
	t.Helper()
	e, err := sim.New(sim.Config{Model: "m", MaxContext: 512, MaxConcurrency: 4, TimeScale: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthWhileLoading(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.run(ctx, ln, func(context.Context) (backend, error) {
			<-release
			return engineBackend{newSim(t)}, nil
		})
	}()
	for _, p := range []string{"/health", "/v1/models"} {
		code, body := get(t, url+p)
		if code != 503 || !strings.Contains(body, "loading") {
			t.Errorf("%s while loading: %d %s", p, code, body)
		}
	}
	if code, _ := get(t, url+"/metrics"); code != 200 {
		t.Errorf("metrics while loading: %d", code)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := get(t, url+"/health"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("health never turned 200")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
}

// A failed open ends run with its error, and leaves no listener behind:
// the shutdown that follows at once may run before the Serve goroutine
// has taken the listener (tried 20 times to meet that order).
func TestLoadFailure(t *testing.T) {
	for range 20 {
		s, err := New(Config{Model: "m", MaxConcurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("no device")
		err = s.run(context.Background(), ln, func(context.Context) (backend, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("run = %v, want the open error", err)
		}
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			t.Fatalf("%s still accepts after run returned", ln.Addr())
		}
	}
}

// panicky panics in Generate to prove a request's panic stays a 500.
type panicky struct{ *sim.Engine }

func (panicky) Generate(context.Context, *runtime.Request) (*runtime.Stream, error) {
	panic("engine bug")
}

func TestPanicBecomes500(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := newSim(t)
	defer e.Close()
	s.SetEngine(panicky{e})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.srv.Shutdown()
	url := "http://" + ln.Addr().String()
	for range 2 {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || !strings.Contains(string(b), `"code":500`) {
			t.Errorf("panic answered %d %s", resp.StatusCode, b)
		}
	}
	// The slots the panicking requests took are free again.
	if got := s.m.running.Load(); got != 0 {
		t.Errorf("running = %d after panics", got)
	}
	// Streams recover too and end the response.
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if code, _ := get(t, url+"/health"); code != 200 {
		t.Errorf("health %d after panics", code)
	}
}

// A client that sends its request too slowly is cut off after ReadTimeout
// instead of holding a connection forever.
func TestSlowClientTimesOut(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 1, ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newSim(t)
	defer e.Close()
	s.SetEngine(e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.srv.Shutdown()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers promise a body that never comes.
	if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\""); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("connection not closed by the server: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cut off after %v", d)
	}
	if len(b) > 0 && !strings.Contains(string(b), "408") && !strings.Contains(string(b), "400") {
		t.Errorf("answer to a slow client: %q", b)
	}
}
