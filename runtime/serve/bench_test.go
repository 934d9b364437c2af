package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/runtime/sim"
)

// The streaming benchmarks run 64 clients, each streaming one 128-token
// completion after another (b.N requests in all), against a sim engine.
// Every token is timed three times: when the engine produced it (sim's
// OnToken), when the front door's write of it to the connection returned
// (a listener wrapper), and when the client read it. They report:
//
//   - tok/s: streamed tokens per second, as the clients received them;
//   - cpu-µs/tok: CPU time of everything (engine, server, clients) per
//     token, which does not depend on how busy the machine is;
//   - p50/p99-frontdoor-µs: engine → written to the connection, the
//     latency the front door adds;
//   - p50/p99-e2e-µs: engine → read by the client, which adds the loopback
//     transfer and the client's own scheduling.
//
// BenchmarkLoopback64 is the floor under the e2e numbers: the same clients
// reading the same bytes from a bare writer with no front door.
const (
	benchClients   = 64
	benchMaxTokens = 128
)

// BenchmarkStream64 is the front door at full speed: sim at time_scale 0,
// clients in this process.
func BenchmarkStream64(b *testing.B) { benchInProcess(b, sim.Timing{}, 0) }

// BenchmarkStream64Paced has the engine paced at a 1 ms decode step (64
// streams offer 64k tok/s), the regime of a real device: what the front
// door adds when it is not the bottleneck.
func BenchmarkStream64Paced(b *testing.B) {
	benchInProcess(b, sim.Timing{TTFT: time.Millisecond, TargetISL: 128, Step: time.Millisecond}, 1)
}

// BenchmarkStream64Process is BenchmarkStream64 with the server in a child
// process (this test binary re-executed), as a real client sees it; on a
// 2-core machine the two processes' threads then share the cores by the
// kernel's time slicing.
func BenchmarkStream64Process(b *testing.B) {
	out := filepath.Join(b.TempDir(), "times.gob")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+out)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("benchmark server: %v", err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	got := runClients(b, "http://"+strings.TrimSpace(addr)+"/v1/completions")
	cpu := cpuTime() - cpu0
	b.StopTimer()
	_ = stdin.Close() // the child dumps its timings and exits
	if err := cmd.Wait(); err != nil {
		b.Fatalf("benchmark server: %v", err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var t benchTimes
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := gob.NewDecoder(f).Decode(&t); err != nil {
		b.Fatal(err)
	}
	report(b, t, got, cpu)
}

// benchChildEnv names the file a re-executed test binary dumps its server
// timings to (see benchServerChild).
const benchChildEnv = "TTIS_SERVE_BENCH_TIMES"

// benchTimes are the server side's token times, unix ns, by request id.
type benchTimes struct {
	Emitted, Written map[string][]int64
}

// benchServer is a sim engine at time_scale scale behind a front door on a
// loopback port, recording token times.
type benchServer struct {
	eng *sim.Engine
	srv *serve.Server
	ln  *stampListener
	// emitted is written by the engine's loop goroutine only and read
	// after Close.
	emitted map[string][]int64
}

func startBenchServer(timing sim.Timing, scale float64) (*benchServer, error) {
	bs := &benchServer{emitted: map[string][]int64{}}
	var err error
	bs.eng, err = sim.New(sim.Config{Model: "bench", MaxContext: 4096, MaxConcurrency: benchClients, TimeScale: scale, Timing: timing, Seed: 1,
		OnToken: func(id string, _ int, at time.Time) {
			bs.emitted[id] = append(bs.emitted[id], at.UnixNano())
		}})
	if err != nil {
		return nil, err
	}
	bs.srv, err = serve.New(serve.Config{Model: "bench", MaxConcurrency: benchClients, MaxQueue: benchClients})
	if err != nil {
		bs.eng.Close()
		return nil, err
	}
	if err := bs.srv.SetBackend(bs.eng); err != nil {
		bs.eng.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		bs.eng.Close()
		return nil, err
	}
	bs.ln = &stampListener{Listener: ln, written: map[string][]int64{}}
	go bs.srv.Serve(bs.ln)
	return bs, nil
}

// stop shuts the server and engine down and returns the server's times.
func (bs *benchServer) stop() benchTimes {
	_ = bs.srv.Shutdown(context.Background())
	_ = bs.eng.Close()
	bs.ln.mu.Lock()
	defer bs.ln.mu.Unlock()
	return benchTimes{Emitted: bs.emitted, Written: bs.ln.written}
}

// benchServerChild is the child side of BenchmarkStream64Process: it
// serves until stdin closes, then writes its times to path.
func benchServerChild(path string) int {
	bs, err := startBenchServer(sim.Timing{}, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(bs.ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	t := bs.stop()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := errors.Join(gob.NewEncoder(f).Encode(t), f.Close()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func benchInProcess(b *testing.B, timing sim.Timing, scale float64) {
	bs, err := startBenchServer(timing, scale)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	got := runClients(b, "http://"+bs.ln.Addr().String()+"/v1/completions")
	cpu := cpuTime() - cpu0
	b.StopTimer()
	report(b, bs.stop(), got, cpu)
}

// clientRun is what the clients saw.
type clientRun struct {
	received map[string][]int64 // read times, unix ns, by request id
	tokens   int
	elapsed  time.Duration
}

// runClients streams b.N completions from url over benchClients
// connections and times each token chunk's arrival.
func runClients(b *testing.B, url string) clientRun {
	body := fmt.Appendf(nil, `{"prompt":"the sun","max_tokens":%d,"ignore_eos":true,"stream":true}`, benchMaxTokens)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients, MaxConnsPerHost: benchClients, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	received := make([]map[string][]int64, benchClients)
	errs := make(chan error, benchClients)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range benchClients {
		received[c] = map[string][]int64{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nil, 32<<10)
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := fmt.Sprintf("bench-%d", n)
				at, err := streamOne(client, br, url, id, body)
				if err != nil {
					errs <- err
					return
				}
				received[c][id] = at
			}
		}()
	}
	wg.Wait()
	run := clientRun{received: map[string][]int64{}, elapsed: time.Since(start)}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	for _, m := range received {
		for id, at := range m {
			run.received[id] = at
			run.tokens += len(at)
		}
	}
	return run
}

// streamOne streams one completion and returns each token chunk's arrival
// time.
func streamOne(client *http.Client, br *bufio.Reader, url, id string, body []byte) ([]int64, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	at := make([]int64, 0, benchMaxTokens)
	br.Reset(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("request %s: read stream: %w", id, err)
		}
		if isTokenEvent(line) {
			at = append(at, time.Now().UnixNano())
		}
	}
	if len(at) != benchMaxTokens {
		return nil, fmt.Errorf("request %s: %d token chunks, want %d", id, len(at), benchMaxTokens)
	}
	return at, nil
}

// isTokenEvent reports whether an SSE line is a chunk with text: the final
// chunk (empty text, finish reason) and [DONE] are not tokens.
func isTokenEvent(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`data: {`)) && !bytes.Contains(line, []byte(`"text":""`))
}

// report computes and reports the benchmark's metrics.
func report(b *testing.B, t benchTimes, run clientRun, cpu time.Duration) {
	var frontDoor, e2e []int64
	for id, got := range run.received {
		emitted, written := t.Emitted[id], t.Written[id]
		if len(emitted) != len(got) || len(written) != len(got) {
			b.Fatalf("request %s: %d tokens emitted, %d written, %d received", id, len(emitted), len(written), len(got))
		}
		for i := range got {
			frontDoor = append(frontDoor, written[i]-emitted[i])
			e2e = append(e2e, got[i]-emitted[i])
		}
	}
	if len(e2e) == 0 {
		b.Fatal("no tokens timed")
	}
	reportRate(b, run.tokens, run.elapsed, cpu)
	reportLatency(b, "frontdoor", frontDoor)
	reportLatency(b, "e2e", e2e)
}

// reportRate reports tokens per second and CPU time per token.
func reportRate(b *testing.B, tokens int, elapsed, cpu time.Duration) {
	b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tok/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(tokens), "cpu-µs/tok")
}

// reportLatency reports the median and 99th percentile of ns latencies in
// µs (it sorts v).
func reportLatency(b *testing.B, name string, v []int64) {
	slices.Sort(v)
	b.ReportMetric(float64(v[len(v)/2])/1e3, "p50-"+name+"-µs")
	b.ReportMetric(float64(v[len(v)*99/100])/1e3, "p99-"+name+"-µs")
}

// stampListener times the front door's writes of token events, by the
// request id in each response's header.
type stampListener struct {
	net.Listener
	mu      sync.Mutex
	written map[string][]int64
}

func (l *stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stampConn{Conn: c, l: l}, nil
}

type stampConn struct {
	net.Conn
	l  *stampListener
	id string
	at []int64
}

// Write stamps every token event in p with the time the write returned. A
// response head starts the next request's times (connections are kept
// alive).
func (c *stampConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	now := time.Now().UnixNano()
	if _, rest, ok := bytes.Cut(p, []byte("X-Request-Id: ")); ok {
		c.save()
		id, _, _ := bytes.Cut(rest, []byte("\r\n"))
		c.id, c.at = string(id), nil
	}
	for line := range bytes.Lines(p) {
		if isTokenEvent(line) {
			c.at = append(c.at, now)
		}
	}
	return n, err
}

func (c *stampConn) save() {
	if c.id != "" {
		c.l.mu.Lock()
		c.l.written[c.id] = c.at
		c.l.mu.Unlock()
	}
}

func (c *stampConn) Close() error {
	c.save()
	return c.Conn.Close()
}

// BenchmarkLoopback64 is the transport floor under the e2e numbers: 64
// loopback connections written by one bare goroutine each, a 150-byte
// event per write in lock-step steps (every stream's event of a step is
// read before the next), read by the clients' code path without HTTP. What
// the front door's e2e latency has above this is what it, the engine and
// HTTP add.
func BenchmarkLoopback64(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	srv := make([]net.Conn, benchClients)
	cli := make([]net.Conn, benchClients)
	for i := range benchClients {
		if cli[i], err = net.Dial("tcp", ln.Addr().String()); err != nil {
			b.Fatal(err)
		}
		if srv[i], err = ln.Accept(); err != nil {
			b.Fatal(err)
		}
		defer cli[i].Close()
		defer srv[i].Close()
	}
	event := append(bytes.Repeat([]byte("x"), 149), '\n')
	steps := (b.N*benchMaxTokens + benchClients - 1) / benchClients
	sent := make([]atomic.Int64, steps)
	lat := make([][]int64, benchClients)
	got := make(chan struct{}, benchClients)
	var wg sync.WaitGroup
	for i := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(cli[i], 32<<10)
			for k := range steps {
				if _, err := br.ReadSlice('\n'); err != nil {
					return
				}
				lat[i] = append(lat[i], time.Now().UnixNano()-sent[k].Load())
				got <- struct{}{}
			}
		}()
	}
	wake := make([]chan struct{}, benchClients)
	for i := range benchClients {
		wake[i] = make(chan struct{}, 1)
		go func() {
			for range wake[i] {
				if _, err := srv[i].Write(event); err != nil {
					return
				}
			}
		}()
		defer close(wake[i])
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for k := range steps {
		sent[k].Store(time.Now().UnixNano())
		for i := range benchClients {
			wake[i] <- struct{}{}
		}
		for range benchClients {
			<-got
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	wg.Wait()
	var all []int64
	for _, l := range lat {
		all = append(all, l...)
	}
	reportRate(b, len(all), elapsed, cpu)
	reportLatency(b, "e2e", all)
}

// cpuTime is this process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
