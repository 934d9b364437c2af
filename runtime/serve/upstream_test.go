package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/vllm"
)

// proxyUpstream is an Upstream made of the vllm runtime's proxy pointed at
// an in-process ttis server (standing in for vLLM).
type proxyUpstream struct {
	*vllm.Proxy
	done chan struct{}
}

func (proxyUpstream) Info() runtime.Info      { return runtime.Info{Model: "up"} }
func (p proxyUpstream) Done() <-chan struct{} { return p.done }
func (proxyUpstream) Err() error              { return errors.New("upstream killed") }
func (proxyUpstream) Close() error            { return nil }

func TestUpstreamMode(t *testing.T) {
	// The upstream: a plain sim-backed server.
	upSrv, err := New(Config{Model: "up", MaxConcurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	e := newSim(t)
	defer e.Close()
	if err := upSrv.SetBackend(e); err != nil {
		t.Fatal(err)
	}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go upSrv.Serve(upLn)
	defer upSrv.srv.Shutdown()

	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("k1"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.ModeAPIKey, secret, auth.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	front, err := New(Config{Model: "up", MaxConcurrency: 1, MaxQueue: 0, Auth: v, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	up := proxyUpstream{Proxy: vllm.NewProxy(upLn.Addr().String(), 10*time.Second), done: make(chan struct{})}
	runDone := make(chan error, 1)
	go func() {
		runDone <- front.run(context.Background(), ln, func(context.Context) (runtime.Backend, error) { return up, nil })
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := get(t, url+"/health"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("front door never became healthy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	post := func(body, key string) (int, string) {
		req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(`{"prompt":"hi","max_tokens":3}`, ""); code != 401 {
		t.Errorf("no key: %d %s", code, body)
	}
	if code, body := post(`{"prompt":"hi","max_tokens":3,"ignore_eos":true}`, "k1"); code != 200 || !strings.Contains(body, `"completion_tokens":3`) {
		t.Errorf("forwarded completion: %d %s", code, body)
	}
	if code, body := post(`{"prompt":"hi","max_tokens":3,"stream":true}`, "k1"); code != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("forwarded stream: %d %q", code, body)
	}
	if got := front.m.running.Load(); got != 0 {
		t.Errorf("running = %d after forwarded requests", got)
	}
	if front.m.e2e.total.Load() != 2 {
		t.Errorf("e2e observations = %d, want 2", front.m.e2e.total.Load())
	}
	// The upstream dies: health turns 503 and Run ends with the reason.
	close(up.done)
	select {
	case err := <-runDone:
		if err == nil || !strings.Contains(err.Error(), "upstream killed") {
			t.Errorf("run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end after the upstream died")
	}
}
