package serve

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Prometheus text exposition of vLLM's metric names, written by hand with
// atomics: a histogram observation on the per-token path is two atomic adds
// and a short search, with no locks and no allocation.

// vLLM's bucket edges (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
		5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// promLabelEscaper escapes a Prometheus label value.
var promLabelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// histogram is a cumulative-on-export Prometheus histogram.
type histogram struct {
	edges  []float64
	counts []atomic.Uint64 // one per edge, plus +Inf
	sumBit atomic.Uint64   // float64 bits, updated by CAS
	total  atomic.Uint64
}

func newHistogram(edges []float64) *histogram {
	return &histogram{edges: edges, counts: make([]atomic.Uint64, len(edges)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.edges) && v > h.edges[i] {
		i++
	}
	h.counts[i].Add(1)
	h.total.Add(1)
	for {
		old := h.sumBit.Load()
		if h.sumBit.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// metrics are one unit's serving metrics.
type metrics struct {
	labels string // {model_name="…",engine="0"}

	running, waiting atomic.Int64
	// readingBytes are the request bytes holding the reading budget
	// (admit.go).
	readingBytes atomic.Int64

	promptTokens, generationTokens atomic.Uint64

	// prefixQueries and prefixHits count prompt tokens looked up in the
	// engine's prefix cache and those found there (vLLM counts tokens too).
	prefixQueries, prefixHits atomic.Uint64

	successMu sync.Mutex
	success   map[string]uint64 // by finished_reason

	ttft, itl, e2e, queue, prefill, decode, inference *histogram
}

func newMetrics(model string) *metrics {
	l := append([]byte(`{model_name="`), promLabelEscaper.Replace(model)...)
	l = append(l, `",engine="0"}`...)
	return &metrics{
		labels:    string(l),
		success:   map[string]uint64{"stop": 0, "length": 0, "abort": 0},
		ttft:      newHistogram(ttftBuckets),
		itl:       newHistogram(itlBuckets),
		e2e:       newHistogram(latencyBuckets),
		queue:     newHistogram(latencyBuckets),
		prefill:   newHistogram(latencyBuckets),
		decode:    newHistogram(latencyBuckets),
		inference: newHistogram(latencyBuckets),
	}
}

func (m *metrics) finished(reason string) {
	m.successMu.Lock()
	m.success[reason]++
	m.successMu.Unlock()
}

// appendText writes the Prometheus text format (version 0.0.4).
func (m *metrics) appendText(b []byte) []byte {
	gauge := func(name, help string, v int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"+name...)
		b = append(b, m.labels...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	counter := func(name, help string, v uint64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" counter\n"+name...)
		b = append(b, m.labels...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, v, 10)
		b = append(b, '\n')
	}
	hist := func(name, help string, h *histogram) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" histogram\n"...)
		inner := m.labels[1 : len(m.labels)-1]
		cum := uint64(0)
		for i := range h.counts {
			cum += h.counts[i].Load()
			b = append(b, name+"_bucket{"...)
			b = append(b, inner...)
			b = append(b, `,le="`...)
			if i < len(h.edges) {
				b = strconv.AppendFloat(b, h.edges[i], 'g', -1, 64)
			} else {
				b = append(b, "+Inf"...)
			}
			b = append(b, `"} `...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, name+"_sum"...)
		b = append(b, m.labels...)
		b = append(b, ' ')
		b = strconv.AppendFloat(b, math.Float64frombits(h.sumBit.Load()), 'g', -1, 64)
		b = append(b, '\n')
		b = append(b, name+"_count"...)
		b = append(b, m.labels...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	gauge("vllm:num_requests_running", "Number of sequences holding a slot (running or prefilling).", m.running.Load())
	gauge("vllm:num_requests_waiting", "Number of sequences waiting for a slot, and of requests waiting to be read (limits.max_inflight_bytes).", m.waiting.Load())
	gauge("ttis:request_bytes_reading", "Bytes of request bodies being decoded and tokenized (bounded by limits.max_inflight_bytes).", m.readingBytes.Load())
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens.Load())
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.generationTokens.Load())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.prefixQueries.Load())
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.prefixHits.Load())
	b = append(b, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n"...)
	m.successMu.Lock()
	inner := m.labels[1 : len(m.labels)-1]
	for _, r := range []string{"stop", "length", "abort"} {
		b = append(b, "vllm:request_success_total{"...)
		b = append(b, inner...)
		b = append(b, `,finished_reason="`+r+`"} `...)
		b = strconv.AppendUint(b, m.success[r], 10)
		b = append(b, '\n')
	}
	m.successMu.Unlock()
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft)
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl)
	hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds (deprecated alias of inter_token_latency).", m.itl)
	hist("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", m.e2e)
	hist("vllm:request_queue_time_seconds", "Histogram of time spent waiting for a slot in seconds.", m.queue)
	hist("vllm:request_prefill_time_seconds", "Histogram of time from slot to first token in seconds.", m.prefill)
	hist("vllm:request_decode_time_seconds", "Histogram of time from first to last token in seconds.", m.decode)
	hist("vllm:request_inference_time_seconds", "Histogram of time from slot to last token in seconds.", m.inference)
	return b
}
