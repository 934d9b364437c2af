package vllm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Proxy forwards requests to the upstream server, streaming responses
// (SSE) through as they arrive.
type Proxy struct {
	client *fasthttp.HostClient
	// Authorization, when set, is sent upstream in place of the client's
	// (a media server's per-start key; media.go).
	Authorization string
}

// dialTimeout bounds connecting to the upstream on loopback, as
// fasthttp's default dialer bounds it.
const dialTimeout = fasthttp.DefaultDialTimeout

// NewProxy returns a proxy to the server at addr (host:port). idle bounds
// how long an upstream response may go without sending a byte: a hung
// device shows up as an error instead of a stream that never ends.
func NewProxy(addr string, idle time.Duration) *Proxy {
	return &Proxy{client: &fasthttp.HostClient{
		Addr: addr,
		// The upstream listens on loopback: a plain dial, rather than
		// fasthttp's default dialer, whose process-wide DNS cache keeps a
		// cleaner goroutine running for a minute after every dial.
		Dial: func(addr string) (net.Conn, error) {
			return (&net.Dialer{Timeout: dialTimeout}).Dial("tcp", addr)
		},
		StreamResponseBody: true,
		ReadTimeout:        idle,
		WriteTimeout:       idle,
		MaxConns:           4096,
	}}
}

// Forward sends ctx's request upstream and writes the upstream response to
// ctx. onChunk, when not nil, is called from the streaming goroutine with
// each body chunk as it is written (for time-to-first-byte metrics); done is
// called once the response has ended, with nil or the error that cut it.
// A failed downstream write closes the upstream connection, which vLLM
// treats as a cancelled request.
func (p *Proxy) Forward(ctx *fasthttp.RequestCtx, onChunk func(n int), done func(error)) {
	req := fasthttp.AcquireRequest()
	ctx.Request.CopyTo(req)
	req.SetHost(p.client.Addr)
	req.Header.Del("Authorization") // auth ends at the front door
	if p.Authorization != "" {
		req.Header.Set("Authorization", p.Authorization)
	}
	resp := fasthttp.AcquireResponse()
	err := p.client.Do(req, resp)
	fasthttp.ReleaseRequest(req)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
		ctx.SetContentType("application/json")
		msg := fmt.Sprintf("upstream server: %v", err)
		fmt.Fprintf(ctx, `{"error":{"message":%q,"type":"BadGatewayError","param":null,"code":502}}`, msg)
		if done != nil {
			done(err)
		}
		return
	}
	ctx.SetStatusCode(resp.StatusCode())
	for k, v := range resp.Header.All() {
		switch string(k) {
		case fasthttp.HeaderContentLength, fasthttp.HeaderTransferEncoding, fasthttp.HeaderConnection, fasthttp.HeaderDate, fasthttp.HeaderServer:
		default:
			ctx.Response.Header.SetBytesKV(k, v)
		}
	}
	body := resp.BodyStream()
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		err := copyFlushing(w, body, onChunk)
		if err != nil {
			// Do not return a half-read connection to the pool.
			resp.SetConnectionClose()
		}
		fasthttp.ReleaseResponse(resp)
		if done != nil {
			done(err)
		}
	})
}

// copyFlushing copies r to w, flushing after every read so that each SSE
// event reaches the client when the upstream sends it.
func copyFlushing(w *bufio.Writer, r io.Reader, onChunk func(int)) error {
	if r == nil {
		return nil
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return fmt.Errorf("write to client: %w", werr)
			}
			if werr := w.Flush(); werr != nil {
				return fmt.Errorf("write to client: %w", werr)
			}
			if onChunk != nil {
				onChunk(n)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read from upstream: %w", err)
		}
	}
}
