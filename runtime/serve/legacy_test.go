package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ttis-dev/ttis/runtime/auth"
)

const legacyRoute = "/inference/falcon40b"

// TestLegacyAPIWithCurl runs a sim unit serving the legacy API behind jwt
// auth and talks to it as its users did: curl --no-buffer with a token
// from jwt_util (team_id and token_id claims), numbers as strings.
func TestLegacyAPIWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	secret := "test-secret-456"
	u := startUnit(t, 1, fmt.Sprintf("[auth]\nmode = \"jwt\"\nsecret_file = %q\nallow_no_expiry = true\n[api]\nlegacy = true\nlegacy_route = %q\n", writeSecret(t, secret), legacyRoute))
	token, err := auth.Mint([]byte(secret), "tenstorrent", "debug-test", 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := `{"text":"Have you been to Paris, France?", "temperature":"1", "top_k":"40", "top_p":"0.9", "max_tokens":"24"}`
	cmd := exec.CommandContext(ctx, curl, "--no-buffer", "-sS", "--include", u.url+legacyRoute,
		"-H", "Content-Type: application/json", "-H", "Authorization: Bearer "+token, "-d", body)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The sim paces tokens as the device would: the first text arrives
	// well before the answer ends.
	br := bufio.NewReader(out)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("headers: %v after %q", err, head.String())
		}
		head.WriteString(line)
		if line == "\r\n" {
			break
		}
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(br, first); err != nil {
		t.Fatal(err)
	}
	firstAt := time.Now()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	endAt := time.Now()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("curl: %v", err)
	}
	text := string(first) + string(rest)
	h := strings.ToLower(head.String())
	if !strings.HasPrefix(h, "http/1.1 200") || !strings.Contains(h, "transfer-encoding: chunked") {
		t.Fatalf("headers:\n%s", head.String())
	}
	if !strings.HasSuffix(text, "<|endoftext|>") || len(text) <= len("<|endoftext|>") {
		t.Fatalf("answer %q", text)
	}
	if endAt.Sub(firstAt) < 100*time.Millisecond {
		t.Errorf("the answer came at once (%v from first byte to end): not streamed", endAt.Sub(firstAt))
	}

	// Bad requests and bad tokens answer as the original did.
	good := "Bearer " + token
	wrongKey, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"team_id": "t", "token_id": "i"}).SignedString([]byte("another-secret"))
	noClaims, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "x"}).SignedString([]byte(secret))
	for _, c := range []struct {
		auth, ctype, body string
		code              int
		msg               string
	}{
		{"", "application/json", `{"text":"hi"}`, 401, "Must provide Authorization header."},
		{"Basic dTpw", "application/json", `{"text":"hi"}`, 401, "Authorization scheme was 'basic' instead of bearer"},
		{"Bearer " + wrongKey, "application/json", `{"text":"hi"}`, 401, "JWT payload decode error: token signature is invalid: signature is invalid"},
		{"Bearer " + noClaims, "application/json", `{"text":"hi"}`, 401, "token lacks team_id or token_id claim"},
		{"Bearer not.a.jwt", "application/json", `{"text":"hi"}`, 401, "JWT payload decode error: token is malformed"},
		{good, "text/plain", `{"text":"hi"}`, 400, "Request was not JSON"},
		{good, "application/json", `{"text":`, 400, "Malformed JSON request body"},
		{good, "application/json", `{"text":""}`, 400, "required 'text' parameter is either empty or not provided"},
		{good, "application/json", `{"max_tokens":4}`, 400, "required 'text' parameter is either empty or not provided"},
		{good, "application/json", `{"text":"hi","temperature":"sdfgnskdgjn"}`, 400, "Parameter: temperature is type=<class 'str'>, expected <class 'float'>"},
		{good, "application/json", `{"text":"hi","top_k":"ddgsd"}`, 400, "Parameter: top_k is type=<class 'str'>, expected <class 'int'>"},
		{good, "application/json", `{"text":"hi","max_tokens":"dg2"}`, 400, "Parameter: max_tokens is type=<class 'str'>, expected <class 'int'>"},
		{good, "application/json", `{"text":"hi","max_tokens":null}`, 400, "Parameter: max_tokens is type=<class 'NoneType'>, expected <class 'int'>"},
		{good, "application/json", `{"text":"hi","temperature":"0"}`, 400, "Parameter: temperature=0.0 is outside bounds, 0.01 <= temperature <= 100.0."},
		{good, "application/json", `{"text":"hi","top_k":0}`, 400, "Parameter: top_k=0 is outside bounds, 1 <= top_k <= 1000."},
		{good, "application/json", `{"text":"hi","top_p":-1}`, 400, "Parameter: top_p=-1.0 is outside bounds, 0.01 <= top_p <= 1.0."},
		{good, "application/json", `{"text":"hi","max_tokens":-1}`, 400, "Parameter: max_tokens=-1 is outside bounds, 1 <= max_tokens <= 2048."},
		{good, "application/json", `{"text":"hi","max_tokens":9999999}`, 400, "Parameter: max_tokens=9999999 is outside bounds, 1 <= max_tokens <= 2048."},
	} {
		code, _, b := u.request("POST", legacyRoute, c.body, "Authorization", c.auth, "Content-Type", c.ctype)
		var e struct {
			StatusCode int    `json:"status_code"`
			Message    string `json:"message"`
		}
		if err := json.Unmarshal(b, &e); err != nil || code != c.code || e.StatusCode != c.code || !strings.HasPrefix(e.Message, c.msg) {
			t.Errorf("%s %s: %d %s, want %d %q", c.auth, c.body, code, b, c.code, c.msg)
		}
	}
	if code, _, _ := u.request("GET", legacyRoute, ""); code != 405 {
		t.Errorf("GET: %d", code)
	}
	// The OpenAI API is still there, under the same auth.
	if code, _, b := u.request("POST", "/v1/completions", `{"prompt":"hi","max_tokens":2}`, "Authorization", good); code != 200 {
		t.Errorf("completions: %d %s", code, b)
	}
}

// TestLegacyAPIOptions: stop_sequence ends the text (the end marker
// still follows), return_prompt writes the prompt first.
func TestLegacyAPIOptions(t *testing.T) {
	u := startUnit(t, 0, "[api]\nlegacy = true\n")
	post := func(body string) string {
		resp, err := http.Post(u.url+"/inference/sim-test", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.TransferEncoding == nil || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.TransferEncoding, b)
		}
		return string(b)
	}
	full := post(`{"text":"The sun","max_tokens":40,"top_k":1}`)
	text := strings.TrimSuffix(full, "<|endoftext|>")
	words := strings.Fields(text)
	if len(words) < 3 {
		t.Fatalf("answer %q", full)
	}
	stop := " " + words[2]
	got := post(fmt.Sprintf(`{"text":"The sun","max_tokens":40,"top_k":1,"stop_sequence":%q}`, stop))
	if want := text[:strings.Index(text, stop)] + "<|endoftext|>"; got != want {
		t.Errorf("with stop %q: %q, want %q", stop, got, want)
	}
	if got := post(`{"text":"The sun","max_tokens":40,"top_k":1,"return_prompt":true}`); got != "The sun"+full {
		t.Errorf("return_prompt: %q", got)
	}
}
