package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// testJob is a job over the sim tokenizer with fixed ids, for exact output.
func testJob(t *testing.T, chat bool, logprobs int, usage bool) (*job, *seqState) {
	t.Helper()
	e := newSim(t)
	t.Cleanup(func() { e.Close() })
	s, err := New(Config{Model: "m", MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBackend(e); err != nil {
		t.Fatal(err)
	}
	var f format = completionFormat{}
	if chat {
		f = chatFormat{}
	}
	j := &job{s: s, st: s.be.Load().text, r: &genRequest{chat: chat, logprobs: logprobs, includeUsage: usage}, f: f, respID: "id-1", created: 1700000000, promptToks: 3}
	q := &seqState{index: 0, tokens: 2}
	j.seqs = []*seqState{q}
	return j, q
}

func TestAppendChunksChat(t *testing.T) {
	j, q := testJob(t, true, -1, true)
	q.events = []event{{text: []byte(" hello")}, {text: []byte(" \"world\"")}}
	got := string(j.f.appendChunks(nil, j, q, false))
	want := `data: {"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" hello"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" \"world\""},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The end: an empty delta with the finish reason; the role is not
	// repeated.
	q.events = q.events[:0]
	q.finish, q.stop = "stop", "\n"
	got = string(j.f.appendChunks(nil, j, q, true))
	want = `data: {"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":"\n"}],"usage":null}` + "\n\n"
	if got != want {
		t.Errorf("final chunk\n%s\nwant\n%s", got, want)
	}
	usage := string(j.appendUsage(nil))
	if usage != `{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}` {
		t.Errorf("usage %s", usage)
	}
}

func TestAppendChunksCompletionLogprobs(t *testing.T) {
	j, q := testJob(t, false, 1, false)
	tok := j.st.tok
	ids, _ := tok.Encode(" the water", false)
	q.events = []event{
		{text: tok.TokenBytes(ids[0]), tok: runtime.Token{ID: ids[0], Logprob: -0.5, Top: []runtime.TokenLogprob{{ID: ids[1], Logprob: -0.25}}}, hasTok: true},
		{text: tok.TokenBytes(ids[1]), tok: runtime.Token{ID: ids[1], Logprob: -1.5}, hasTok: true},
	}
	q.finish = "length"
	got := string(j.f.appendChunks(nil, j, q, true))
	want := `data: {"id":"id-1","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":" the","logprobs":{"text_offset":[0],"token_logprobs":[-0.5],"tokens":[" the"],"top_logprobs":[{" the":-0.5," water":-0.25}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"id-1","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":" water","logprobs":{"text_offset":[4],"token_logprobs":[-1.5],"tokens":[" water"],"top_logprobs":[{" water":-1.5}]},"finish_reason":"length","stop_reason":null}]}` + "\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSSESinkFraming checks the HTTP framing of a streamed response by
// parsing it with net/http.
func TestSSESinkFraming(t *testing.T) {
	cases := []struct {
		name          string
		keep, chunked bool
	}{
		{"keep-alive", true, true},
		{"close", false, true},
		{"http/1.0", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server, client := net.Pipe()
			k := &sseSink{conn: server, timeout: time.Second, chunked: c.chunked}
			go func() {
				defer server.Close()
				if err := k.header("req-9", c.keep); err != nil {
					return
				}
				k.buf = append(k.buf, "data: {\"a\":1}\n\n"...)
				_ = k.flush()
				_ = k.ping()
				k.buf = append(k.buf, "data: [DONE]\n\n"...)
				_ = k.flush()
				_ = k.end()
				if c.keep {
					// The response is complete without the close: the
					// client must not need it.
					_, _ = server.Write([]byte("NEXT"))
				}
			}()
			br := bufio.NewReader(client)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Request-Id") != "req-9" ||
				chunked != c.chunked || resp.Close == c.keep && c.chunked {
				t.Errorf("response head %+v", resp)
			}
			if want := "data: {\"a\":1}\n\n: ping\n\ndata: [DONE]\n\n"; string(body) != want {
				t.Errorf("body %q, want %q", body, want)
			}
			if c.keep {
				rest, _ := io.ReadAll(br)
				if string(rest) != "NEXT" {
					t.Errorf("after the response the connection holds %q, want NEXT", rest)
				}
			}
		})
	}
}

func TestAPIErrorShape(t *testing.T) {
	e := badRequest("max_tokens", "max_tokens must not be negative, got %d", -1)
	var v struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   string `json:"param"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(e.appendJSON(nil), &v); err != nil {
		t.Fatal(err)
	}
	if v.Error.Code != 400 || v.Error.Param != "max_tokens" || v.Error.Type != "BadRequestError" || !strings.Contains(v.Error.Message, "-1") {
		t.Errorf("error JSON %+v", v)
	}
	if got := string((&apiError{Status: 503, Type: "X", Message: "m"}).appendJSON(nil)); !strings.Contains(got, `"param":null`) {
		t.Errorf("no param should be null: %s", got)
	}
}
