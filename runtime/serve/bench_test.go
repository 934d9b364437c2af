package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/sim"
)

// BenchmarkStream64 streams completions through the front door from 64
// concurrent clients, with the sim engine at time_scale 0 so the engine
// costs next to nothing and the numbers are the server's (and the
// in-process client's) overhead. Each b.N is one 128-token request.
//
// Metrics: tok/s streamed (client-observed), CPU per token, and the
// latency the front door adds per token — client receive time minus the
// engine's token time — at p50 and p99.
func BenchmarkStream64(b *testing.B) { benchStream(b, sim.Timing{}, 0) }

// BenchmarkStream64Paced is BenchmarkStream64 with the engine paced at a
// 1 ms decode step (64 streams offer 64k tok/s), the regime of a real
// device: it shows the latency the front door adds when it is not the
// bottleneck.
func BenchmarkStream64Paced(b *testing.B) {
	benchStream(b, sim.Timing{TTFT: time.Millisecond, TargetISL: 128, Step: time.Millisecond}, 1)
}

func benchStream(b *testing.B, timing sim.Timing, scale float64) {
	const (
		clients   = 64
		maxTokens = 128
	)
	var times sync.Map // request id -> []atomic.Int64 (engine time, ns)
	eng, err := sim.New(sim.Config{Model: "bench", MaxContext: 4096, MaxConcurrency: clients, TimeScale: scale, Timing: timing, Seed: 1,
		OnToken: func(id string, i int, at time.Time) {
			if v, ok := times.Load(id); ok && i < maxTokens {
				v.([]atomic.Int64)[i].Store(at.UnixNano())
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	s, err := New(Config{Model: "bench", MaxConcurrency: clients, MaxQueue: clients})
	if err != nil {
		b.Fatal(err)
	}
	s.SetEngine(eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	defer s.srv.Shutdown()
	url := "http://" + ln.Addr().String() + "/v1/completions"
	body := []byte(fmt.Sprintf(`{"prompt":"the sun","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}}

	var next atomic.Int64
	var tokens atomic.Int64
	lat := make([][]int64, clients) // added latency samples per client, ns
	errs := make(chan error, clients)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var line []byte
			br := bufio.NewReaderSize(nil, 32<<10)
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := fmt.Sprintf("bench-%d", n)
				slots := make([]atomic.Int64, maxTokens)
				times.Store(id, slots)
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("X-Request-Id", id)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				br.Reset(resp.Body)
				i := 0
				for {
					line, err = br.ReadSlice('\n')
					if err != nil {
						break
					}
					// Token chunks carry a non-empty "text"; the final
					// chunk and [DONE] do not count.
					if bytes.HasPrefix(line, []byte(`data: {`)) && !bytes.Contains(line, []byte(`"text":""`)) {
						now := time.Now().UnixNano()
						if i < maxTokens {
							if at := slots[i].Load(); at > 0 {
								lat[c] = append(lat[c], now-at)
							}
						}
						i++
					}
				}
				resp.Body.Close()
				times.Delete(id)
				if err != io.EOF {
					errs <- fmt.Errorf("read stream: %v", err)
					return
				}
				if i != maxTokens {
					errs <- fmt.Errorf("request %s: %d token chunks, want %d", id, i, maxTokens)
					return
				}
				tokens.Add(int64(i))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var all []int64
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		b.Fatal("no latency samples")
	}
	b.ReportMetric(float64(tokens.Load())/elapsed.Seconds(), "tok/s")
	// CPU per token (server, engine and client together) does not depend
	// on how busy the shared machine is: 2 cores / this = the ceiling.
	b.ReportMetric(float64(cpu.Microseconds())/float64(tokens.Load()), "cpu-µs/tok")
	b.ReportMetric(float64(all[len(all)/2])/1e3, "p50-added-µs")
	b.ReportMetric(float64(all[len(all)*99/100])/1e3, "p99-added-µs")
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
