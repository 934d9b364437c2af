package client

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// sseBody builds a vLLM-shaped completions stream of n tokens with final
// usage, as the server would send it.
func sseBody(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-8f2a\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"text\":\" word%d\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}\n\n", i)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-8f2a\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"Llama-3.1-8B-Instruct\",\"choices\":[],\"usage\":{\"prompt_tokens\":128,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", 128+n, n)
	return b.Bytes()
}

// BenchmarkReadStream measures the client's per-token cost: SSE framing,
// the targeted chunk scan, timestamps and record keeping, on one goroutine
// with the body in memory. tokens/s is the single-core ceiling of the
// client's parsing.
func BenchmarkReadStream(b *testing.B) {
	const n = 1024
	body := sseBody(n)
	c := &Client{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	start := time.Now()
	for range b.N {
		var rec metrics.Request
		c.readStream(context.Background(), openai.NewReader(bytes.NewReader(body), 32<<10), time.Now(), &rec)
		if !rec.Success || rec.OutputTokens != n || len(rec.ChunkTimesS) != n {
			b.Fatalf("record %+v", rec.Error)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "tokens/s")
}

func TestReadStreamBody(t *testing.T) {
	var rec metrics.Request
	(&Client{}).readStream(context.Background(), openai.NewReader(bytes.NewReader(sseBody(5)), 64), time.Now(), &rec)
	if !rec.Success || rec.OutputTokens != 5 || rec.PromptTokens != 128 || rec.GeneratedText != " word0 word1 word2 word3 word4" {
		t.Errorf("record %+v", rec)
	}
}
