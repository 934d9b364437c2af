package serve_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/runtime/media"
	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/runtime/sim"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// mediaServer is an in-process front door over a sim media unit.
type mediaServer struct {
	t   testing.TB
	url string
	eng runtime.MediaEngine
}

// startMedia loads a sim unit for (model, device) from a unit file with
// extra TOML and serves it in-process.
func startMedia(t testing.TB, model, device, extra string) *mediaServer {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.toml")
	text := fmt.Sprintf("model = %q\ndevice = %q\nruntime = \"sim\"\nlisten = \"127.0.0.1:1\"\n%s\n", model, device, extra)
	if !strings.Contains(extra, "[sim]") {
		text += "[sim]\ntime_scale = 0\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := units.Load(path)
	if err != nil {
		t.Fatalf("load %s on %s: %v", model, device, err)
	}
	eng, err := sim.OpenMedia(context.Background(), u)
	if err != nil {
		t.Fatalf("open %s on %s: %v", model, device, err)
	}
	cfg, err := serve.ConfigFor(u, serve.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetMedia(eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		_ = eng.Close()
	})
	return &mediaServer{t: t, url: "http://" + ln.Addr().String(), eng: eng}
}

func (m *mediaServer) do(method, path, contentType string, body []byte) (int, http.Header, []byte) {
	m.t.Helper()
	req, err := http.NewRequest(method, m.url+path, bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (m *mediaServer) postJSON(path string, v any) (int, []byte) {
	m.t.Helper()
	b, _ := json.Marshal(v)
	code, _, body := m.do("POST", path, "application/json", b)
	return code, body
}

// testWAV is a 16 kHz mono clip of the given length.
func testWAV(seconds float64) []byte {
	n := int(seconds * 16000)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(3000 * math.Sin(float64(i)/10))
	}
	return media.WAV(s, 16000, 1)
}

// testMP3 is n MPEG-1 layer III frames (128 kbit/s, 44.1 kHz) of silence.
func testMP3(frames int) []byte {
	var b []byte
	for range frames {
		f := make([]byte, 417)
		copy(f, []byte{0xFF, 0xFB, 0x90, 0x64})
		b = append(b, f...)
	}
	return b
}

func testPNG(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEveryMediaRowServes walks every media spec of the catalog, starts
// it as a sim unit and makes one request of its task, checking the output
// is real: a decodable PNG of the asked size, a timed transcript, a valid
// WAV, a classification, unit vectors of the model's length.
func TestEveryMediaRowServes(t *testing.T) {
	n := 0
	for _, spec := range catalog.Specs() {
		if !spec.IsMedia() {
			continue
		}
		n++
		t.Run(spec.ModelName+"@"+spec.Device, func(t *testing.T) {
			m := startMedia(t, spec.ModelName, spec.Device, "")
			code, _, body := m.do("GET", "/tt-liveness", "", nil)
			if code != 200 || !bytes.Contains(body, []byte(`"model_ready":true`)) {
				t.Fatalf("liveness %d %s", code, body)
			}
			switch spec.MediaService() {
			case "image":
				req := map[string]any{"prompt": "a red fox", "seed": 3, "n": 1}
				path := "/v1/images/generations"
				switch runner, _ := catalog.MediaRunner(&spec); runner {
				case "tt-sdxl-image-to-image":
					path, req["image"] = "/v1/images/image-to-image", base64.StdEncoding.EncodeToString(testPNG(t))
				case "tt-sdxl-edit":
					path, req["image"], req["mask"] = "/v1/images/edits", base64.StdEncoding.EncodeToString(testPNG(t)), base64.StdEncoding.EncodeToString(testPNG(t))
				}
				checkImages(t, m, path, req, 1)
			case "audio":
				checkTranscript(t, m, 12)
			case "text_to_speech":
				code, hdr, wav := m.do("POST", "/v1/audio/speech", "application/json", []byte(`{"input":"hello there general kenobi","voice":"default"}`))
				if code != 200 || hdr.Get("Content-Type") != "audio/wav" {
					t.Fatalf("speech %d %s", code, wav)
				}
				ai, err := media.ProbeWAV(wav)
				if err != nil || ai.Duration < time.Second {
					t.Fatalf("speech WAV: %+v %v", ai, err)
				}
			case "cnn":
				code, body := m.postJSON("/v1/cnn/search-image", map[string]any{"prompt": base64.StdEncoding.EncodeToString(testPNG(t)), "top_k": 3, "min_confidence": 0})
				if code != 200 || !bytes.Contains(body, []byte(`"top1_class_label"`)) || !bytes.Contains(body, []byte(`"status":"success"`)) {
					t.Fatalf("cnn %d %s", code, body)
				}
			case "embedding":
				dims, _, _ := catalog.EmbeddingDimensions(spec.ModelName)
				checkEmbeddings(t, m, dims)
			case "video":
				checkVideo(t, m, 1)
			default:
				t.Fatalf("unknown service %q", spec.MediaService())
			}
		})
	}
	if n < 80 {
		t.Fatalf("walked %d media specs", n)
	}
}

// SDXL takes 1024x1024 and 512x512 only; the sizes of the answer must be
// what was asked, and the same seed must give the same image.
func checkImages(t *testing.T, m *mediaServer, path string, req map[string]any, want int) [][]byte {
	t.Helper()
	code, body := m.postJSON(path, req)
	if code != 200 {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	var r struct {
		Images []string `json:"images"`
		Data   []struct {
			B64 string `json:"b64_json"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != want || strings.HasPrefix(path, "/v1/") && len(r.Data) != want {
		t.Fatalf("%d images, %d data, want %d", len(r.Images), len(r.Data), want)
	}
	size := 1024
	if s, _ := req["size"].(string); s == "512x512" {
		size = 512
	}
	var out [][]byte
	for _, s := range r.Images {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
		b := img.Bounds()
		// Image models other than SDXL only make 1024x1024.
		if b.Dx() != b.Dy() || b.Dx() != size && b.Dx() != 1024 {
			t.Fatalf("image %v, asked %d", b, size)
		}
		out = append(out, raw)
	}
	return out
}

func checkTranscript(t *testing.T, m *mediaServer, seconds float64) {
	t.Helper()
	wav := testWAV(seconds)
	code, body := m.postJSON("/audio/transcriptions", map[string]any{"file": base64.StdEncoding.EncodeToString(wav)})
	if code != 200 {
		t.Fatalf("transcribe %d %s", code, body)
	}
	var r struct {
		Text     string  `json:"text"`
		Duration float64 `json:"duration"`
		Segments []struct {
			Start float64 `json:"start_time"`
			End   float64 `json:"end_time"`
			Text  string  `json:"text"`
		} `json:"segments"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Duration-seconds) > 0.01 || r.Text == "" {
		t.Fatalf("transcript %s", body)
	}
	if want := int(math.Ceil(seconds / 5)); len(r.Segments) != want || r.Segments[len(r.Segments)-1].End != seconds {
		t.Fatalf("%d segments ending at %v for %vs, want %d", len(r.Segments), r.Segments[len(r.Segments)-1].End, seconds, want)
	}
}

func checkEmbeddings(t *testing.T, m *mediaServer, dims int) {
	t.Helper()
	code, body := m.postJSON("/v1/embeddings", map[string]any{"input": []string{"hello world", "hello world", "goodbye"}})
	if code != 200 {
		t.Fatalf("embeddings %d %s", code, body)
	}
	var r struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
			Index     int       `json:"index"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 3 || r.Usage.PromptTokens <= 0 {
		t.Fatalf("embeddings %+v", r.Usage)
	}
	dot := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	for i, d := range r.Data {
		if len(d.Embedding) != dims || d.Index != i || math.Abs(dot(d.Embedding, d.Embedding)-1) > 1e-4 {
			t.Fatalf("vector %d: %d dims (want %d), norm² %v", i, len(d.Embedding), dims, dot(d.Embedding, d.Embedding))
		}
	}
	if math.Abs(dot(r.Data[0].Embedding, r.Data[1].Embedding)-1) > 1e-4 || dot(r.Data[0].Embedding, r.Data[2].Embedding) > 0.5 {
		t.Fatal("same input must give the same vector, different inputs different ones")
	}
}

// TestImageRequests covers seeds, both shapes and bad input.
func TestImageRequests(t *testing.T) {
	m := startMedia(t, "stable-diffusion-xl-base-1.0", "n150", "")
	a := checkImages(t, m, "/image/generations", map[string]any{"prompt": "a cat", "seed": 42, "num_inference_steps": 20, "guidance_scale": 7.5, "number_of_images": 2, "negative_prompt": "blur"}, 2)
	b := checkImages(t, m, "/v1/images/generations", map[string]any{"prompt": "a cat", "seed": 42, "num_inference_steps": 20, "guidance_scale": 7.5, "n": 2, "negative_prompt": "blur"}, 2)
	if !bytes.Equal(a[0], b[0]) || bytes.Equal(a[0], a[1]) {
		t.Fatal("the same seed must give the same images; the images of one request must differ")
	}
	c := checkImages(t, m, "/image/generations", map[string]any{"prompt": "a cat", "seed": 43}, 1)
	if bytes.Equal(a[0], c[0]) {
		t.Fatal("another seed gave the same image")
	}
	for _, tc := range []struct {
		body  string
		param string
	}{
		{`{"prompt":"x","number_of_images":0}`, "number_of_images"},
		{`{"prompt":"x","number_of_images":1000}`, "number_of_images"},
		{`{"prompt":"x","n":5}`, "n"},
		{`{"prompt":"x","size":"640x480"}`, "size"},
		{`{"prompt":""}`, "prompt"},
		{`{"prompt":"x","num_inference_steps":2}`, "num_inference_steps"},
		{`{"prompt":"x","guidance_scale":50}`, "guidance_scale"},
		{`{"prompt":"x","response_format":"url"}`, "response_format"},
		{`{"prompt":"x","colour":"red"}`, "colour"},
		{`{"prompt":"x","image_return_format":"GIF"}`, "image_return_format"},
	} {
		code, _, body := m.do("POST", "/v1/images/generations", "application/json", []byte(tc.body))
		checkMediaError(t, code, body, 400, tc.param)
	}
	code, body := m.postJSON("/v1/images/generations", map[string]any{"prompt": "x", "image_return_format": "JPEG"})
	if code != 200 || !bytes.Contains(body, []byte(`"output_format":"jpeg"`)) {
		t.Fatalf("JPEG: %d %.200s", code, body)
	}
	// A media unit does not serve text routes, and says why.
	code, _, body = m.do("POST", "/v1/chat/completions", "application/json", []byte(`{"messages":[]}`))
	if code != 404 || !bytes.Contains(body, []byte("image model")) {
		t.Fatalf("chat on an image unit: %d %s", code, body)
	}
	code, _, body = m.do("GET", "/v1/models", "", nil)
	if code != 200 || !bytes.Contains(body, []byte(`"simulated":true`)) || !bytes.Contains(body, []byte(`"task":"image"`)) {
		t.Fatalf("models: %d %s", code, body)
	}
}

func checkMediaError(t *testing.T, code int, body []byte, wantCode int, wantParam string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || code != wantCode {
		t.Fatalf("got %d %s, want %d naming %q", code, body, wantCode, wantParam)
	}
	if wantParam != "" && (e.Error.Param == nil || *e.Error.Param != wantParam) {
		t.Fatalf("error %s does not name %q", body, wantParam)
	}
}

func multipartBody(t testing.TB, fields map[string]string, file []byte, fileName string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if file != nil {
		fw, err := w.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(file)
	}
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// TestTranscriptionRequests covers multipart and JSON uploads, sniffing,
// limits, streaming and bad input.
func TestTranscriptionRequests(t *testing.T) {
	m := startMedia(t, "whisper-large-v3", "n150", "[media]\nmax_audio_duration_seconds = 30\nmax_audio_size_bytes = 2000000\n")
	checkTranscript(t, m, 7.5)
	// Multipart, with a misleading file name: the bytes decide.
	body, ct := multipartBody(t, map[string]string{"model": "whisper-large-v3", "response_format": "verbose_json"}, testMP3(200), "clip.wav")
	code, _, out := m.do("POST", "/v1/audio/transcriptions", ct, body)
	if code != 200 || !bytes.Contains(out, []byte(`"task":"transcribe"`)) {
		t.Fatalf("mp3 multipart: %d %s", code, out)
	}
	var r struct{ Duration float64 }
	_ = json.Unmarshal(out, &r)
	if want := 200 * 1152 / 44100.0; math.Abs(r.Duration-want) > 0.01 {
		t.Fatalf("mp3 duration %v, want %v", r.Duration, want)
	}
	body, ct = multipartBody(t, map[string]string{"response_format": "text"}, testWAV(3), "a.bin")
	code, hdr, out := m.do("POST", "/v1/audio/transcriptions", ct, body)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") || len(out) == 0 {
		t.Fatalf("text: %d %s", code, out)
	}
	// Streaming: one line per 5 s segment, then the whole transcript.
	body, ct = multipartBody(t, map[string]string{"stream": "true"}, testWAV(12), "a.wav")
	code, hdr, out = m.do("POST", "/v1/audio/transcriptions", ct, body)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" || len(lines) != 4 || !strings.Contains(lines[3], `"done":true`) {
		t.Fatalf("stream: %d %s %q", code, hdr.Get("Content-Type"), out)
	}
	truncated := testWAV(2)
	truncated = truncated[:len(truncated)/2]
	for _, tc := range []struct {
		name  string
		file  []byte
		code  int
		param string
	}{
		{"not audio", []byte("hello, this is not audio at all"), 400, "file"},
		{"an image", testPNG(t), 400, "file"},
		{"truncated WAV", truncated, 400, "file"},
		{"0 seconds", testWAV(0), 400, "file"},
		{"over-long", testWAV(31), 400, "file"},
		{"over the size limit", make([]byte, 2000001), 413, "file"},
	} {
		body, ct := multipartBody(t, nil, tc.file, "x.wav")
		code, _, out := m.do("POST", "/v1/audio/transcriptions", ct, body)
		t.Run(tc.name, func(t *testing.T) { checkMediaError(t, code, out, tc.code, tc.param) })
		code, out = m.postJSON("/audio/transcriptions", map[string]any{"file": base64.StdEncoding.EncodeToString(tc.file)})
		t.Run(tc.name+" (json)", func(t *testing.T) { checkMediaError(t, code, out, tc.code, tc.param) })
	}
	body, ct = multipartBody(t, map[string]string{"colour": "red"}, testWAV(1), "x.wav")
	code, _, out = m.do("POST", "/v1/audio/transcriptions", ct, body)
	checkMediaError(t, code, out, 400, "colour")
	body, ct = multipartBody(t, nil, nil, "")
	code, _, out = m.do("POST", "/v1/audio/transcriptions", ct, body)
	checkMediaError(t, code, out, 400, "file")
}

// TestEmbeddingRequests covers encodings, dimensions and bad input.
func TestEmbeddingRequests(t *testing.T) {
	m := startMedia(t, "Qwen3-Embedding-4B", "n150", "")
	checkEmbeddings(t, m, 2560)
	code, body := m.postJSON("/v1/embeddings", map[string]any{"input": "hello", "encoding_format": "base64", "dimensions": 256})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r struct {
		Data []struct{ Embedding string } `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(r.Data[0].Embedding)
	if len(raw) != 256*4 {
		t.Fatalf("%d bytes", len(raw))
	}
	norm := 0.0
	for i := 0; i < len(raw); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-4 {
		t.Fatalf("shortened vector norm² %v", norm)
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = "x"
	}
	for _, tc := range []struct {
		body  any
		param string
	}{
		{map[string]any{"input": ""}, "input"},
		{map[string]any{"input": []string{}}, "input"},
		{map[string]any{"input": []string{"a", " "}}, "input"},
		{map[string]any{"input": many}, "input"},
		{map[string]any{"input": []int{1, 2}}, "input"},
		{map[string]any{}, "input"},
		{map[string]any{"input": "a", "dimensions": 0}, "dimensions"},
		{map[string]any{"input": "a", "dimensions": 5000}, "dimensions"},
		{map[string]any{"input": "a", "encoding_format": "hex"}, "encoding_format"},
	} {
		code, body := m.postJSON("/v1/embeddings", tc.body)
		checkMediaError(t, code, body, 400, tc.param)
	}
	bge := startMedia(t, "bge-large-en-v1.5", "n150", "")
	code, body = bge.postJSON("/v1/embeddings", map[string]any{"input": "a", "dimensions": 256})
	checkMediaError(t, code, body, 400, "dimensions")
}

// TestSpeechAndCNNErrors covers the bad input of the speech and CNN routes.
func TestSpeechAndCNNErrors(t *testing.T) {
	tts := startMedia(t, "speecht5_tts", "n150", "")
	for _, tc := range []struct{ body, param string }{
		{`{"input":""}`, "input"},
		{`{"input":"hi","response_format":"mp3"}`, "response_format"},
		{`{"input":"hi","speed":2}`, "speed"},
		{`{"input":"` + strings.Repeat("a", 20001) + `"}`, "input"},
	} {
		code, _, body := tts.do("POST", "/v1/audio/speech", "application/json", []byte(tc.body))
		checkMediaError(t, code, body, 400, tc.param)
	}
	code, body := tts.postJSON("/v1/audio/speech", map[string]any{"text": "one two three", "response_format": "json"})
	if code != 200 || !bytes.Contains(body, []byte(`"sample_rate":16000`)) {
		t.Fatalf("json speech %d %.200s", code, body)
	}
	cnn := startMedia(t, "resnet-50", "n150", "")
	for _, tc := range []struct {
		body  any
		param string
	}{
		{map[string]any{"prompt": base64.StdEncoding.EncodeToString([]byte("not an image"))}, "prompt"},
		{map[string]any{"prompt": "!!!"}, "prompt"},
		{map[string]any{}, "prompt"},
		{map[string]any{"prompt": base64.StdEncoding.EncodeToString(testPNG(t)), "top_k": 0}, "top_k"},
		{map[string]any{"prompt": base64.StdEncoding.EncodeToString(testPNG(t)), "min_confidence": 101}, "min_confidence"},
	} {
		code, body := cnn.postJSON("/v1/cnn/search-image", tc.body)
		checkMediaError(t, code, body, 400, tc.param)
	}
	body2, ct := multipartBody(t, map[string]string{"top_k": "2", "response_format": "verbose_json"}, testPNG(t), "x.png")
	code, _, out := cnn.do("POST", "/cnn/search-image", ct, body2)
	if code != 200 || !bytes.Contains(out, []byte(`"top1_class_probability"`)) {
		t.Fatalf("multipart cnn %d %s", code, out)
	}
}

// TestMediaAdmission: a media unit's slots and queue answer 429 with
// Retry-After, as text units do.
func TestMediaAdmission(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.toml")
	text := "model = \"stable-diffusion-xl-base-1.0\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:1\"\n[limits]\nmax_concurrency = 1\nmax_queue = 1\n[sim]\ntime_scale = 0.01\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := units.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := sim.OpenMedia(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := serve.ConfigFor(u, serve.Options{})
	cfg.MaxQueue = 0 // a unit's queue is at least 16; no waiting here
	s, _ := serve.New(cfg)
	s.SetMedia(eng)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	defer s.Shutdown(context.Background())
	m := &mediaServer{t: t, url: "http://" + ln.Addr().String()}
	// 12.5 s an image at scale 0.01 is 125 ms; four images hold the
	// only slot for half a second while the others arrive.
	done := make(chan int, 1)
	go func() {
		code, _ := m.postJSON("/image/generations", map[string]any{"prompt": "slow", "number_of_images": 4, "size": "512x512"})
		done <- code
	}()
	// Once the first request holds the slot, the next is refused at once.
	running := []byte(`vllm:num_requests_running{model_name="stable-diffusion-xl-base-1.0",engine="0"} 1`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, _, b := m.do("GET", "/metrics", "", nil); bytes.Contains(b, running) {
			break
		}
	}
	req, _ := http.NewRequest("POST", m.url+"/image/generations", strings.NewReader(`{"prompt":"x","size":"512x512"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second request while the only slot is busy: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if c := <-done; c != 200 {
		t.Fatalf("first request %d", c)
	}
	code, _, body := m.do("GET", "/metrics", "", nil)
	if code != 200 || !bytes.Contains(body, []byte(`vllm:e2e_request_latency_seconds_count`)) {
		t.Fatalf("metrics %d", code)
	}
}

// TestMediaUnitProcess runs a real `ttisd serve` on a sim SDXL unit (the
// unit that failed to start with "no performance target with ttft_ms and
// tput_user") with an API key, and generates an image through it.
func TestMediaUnitProcess(t *testing.T) {
	addr := freePort(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "key")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("model = \"stable-diffusion-xl-base-1.0\"\ndevice = \"t3k\"\nruntime = \"sim\"\nlisten = %q\n[auth]\nmode = \"api-key\"\nsecret_file = %q\n[media]\ndevice_ids = \"(0,1),(2,3)\"\n[sim]\ntime_scale = 0\n", addr, secret)
	u := startUnitFile(t, filepath.Join(dir, "sdxl.toml"), addr, text)
	code, _, body := u.request("POST", "/v1/images/generations", `{"prompt":"x"}`)
	if code != 401 {
		t.Fatalf("no key: %d %s", code, body)
	}
	code, _, body = u.request("POST", "/v1/images/generations", `{"prompt":"a lighthouse","size":"512x512","seed":1}`, "Authorization", "Bearer s3cret")
	if code != 200 || !bytes.Contains(body, []byte(`"b64_json"`)) {
		t.Fatalf("image: %d %.300s", code, body)
	}
	code, _, body = u.request("GET", "/tt-liveness", "")
	if code != 200 || !bytes.Contains(body, []byte(`"runner_in_use":"tt-sdxl-trace"`)) || !bytes.Contains(body, []byte(`"device_ids":[2,3]`)) {
		t.Fatalf("liveness: %d %s", code, body)
	}
	code, _, body = u.request("GET", "/version", "")
	if code != 200 || !bytes.Contains(body, []byte(`"simulated":true`)) || !bytes.Contains(body, []byte(`"task":"image"`)) {
		t.Fatalf("version %d %s", code, body)
	}
	if !strings.Contains(u.log.String(), `"task":"image"`) {
		t.Fatalf("ready line without the task:\n%s", u.log.String())
	}
}

// TestCPUEmbeddings serves /v1/embeddings for real from a cpu unit (`ttisd
// serve` on a random-weight model): unit vectors of the hidden size, the
// same text the same vector, float and base64 alike.
func TestCPUEmbeddings(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := synth.Create(model, synth.Options{Preset: "tiny", Seed: 2}); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	u := startUnitFile(t, filepath.Join(dir, "cpu-emb.toml"), addr, fmt.Sprintf("model = %q\ndevice = \"cpu\"\nlisten = %q\n[cpu]\nthreads = 1\n", model, addr))
	m := &mediaServer{t: t, url: u.url}
	checkEmbeddings(t, m, 64)
	code, body := m.postJSON("/v1/embeddings", map[string]any{"input": "hello world", "encoding_format": "base64"})
	if code != 200 || !bytes.Contains(body, []byte(`"embedding":"`)) {
		t.Fatalf("base64: %d %s", code, body)
	}
	code, body = m.postJSON("/v1/embeddings", map[string]any{"input": "x", "dimensions": 32})
	checkMediaError(t, code, body, 400, "dimensions")
	// An input that cannot fit the context window is refused from its
	// length, before it takes a slot or is tokenized.
	code, body = m.postJSON("/v1/embeddings", map[string]any{"input": []string{"hi", strings.Repeat("ab", 100<<10)}})
	checkMediaError(t, code, body, 400, "input")
	if !bytes.Contains(body, []byte("input[1] is 204800 bytes, at least")) {
		t.Errorf("long input: %s", body)
	}
	code, body = m.postJSON("/v1/images/generations", map[string]any{"prompt": "x"})
	if code != 404 {
		t.Fatalf("images on a cpu unit: %d %s", code, body)
	}
}

// fakeDocker is a `docker` that records its arguments and, for `docker
// run`, starts our own server in the container's place: a sim unit for the
// MODEL and DEVICE it was given, on the host port published for the
// container's 8000, checking the API_KEY it was given, as tt-media-server
// would.
const fakeDocker = `#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$@" >"$FAKE_DOCKER_ARGS"
[ "$1" = run ] || exit 0
port= model= device= key=
prev=
for a in "$@"; do
	case "$prev" in
	--publish) port=${a#127.0.0.1:}; port=${port%%:*} ;;
	--env-file) key=$(sed -n 's/^API_KEY=//p' "$a") ;;
	-e)
		case "$a" in
		MODEL=*) model=${a#MODEL=} ;;
		DEVICE=*) device=${a#DEVICE=} ;;
		esac ;;
	esac
	prev=$a
done
dir=$FAKE_DOCKER_DIR
(umask 077 && printf '%s\n' "$key" >"$dir/key")
cat >"$dir/inner.toml" <<UNIT
model = "$model"
device = "$device"
runtime = "sim"
listen = "127.0.0.1:$port"
[auth]
mode = "api-key"
secret_file = "$dir/key"
[sim]
time_scale = 0
UNIT
exec "$FAKE_TTISD" serve "$dir/inner.toml"
`

// TestMediaContainerPath starts a media unit on the vllm runtime: ttisd
// serve plans tt-media-server's docker run (no vLLM flags, MODEL, DEVICE,
// MODEL_RUNNER, DEVICE_IDS of the unit's chips, port 8000 inside,
// hugepages, one device per chip, API_KEY in the --env-file), supervises
// the fake container and proxies the unit's requests to it with the
// container's key.
func TestMediaContainerPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fakeDocker), 0o755); err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(dir, "docker-args")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DOCKER_ARGS", argsFile)
	t.Setenv("FAKE_TTISD", ttisdBinary(t))
	t.Setenv("FAKE_DOCKER_DIR", t.TempDir())
	secret := filepath.Join(dir, "unit-key")
	if err := os.WriteFile(secret, []byte("front-door-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	up := freePort(t)
	_, upPort, _ := net.SplitHostPort(up)
	text := fmt.Sprintf(`model = "stable-diffusion-xl-base-1.0"
device = "t3k"
runtime = "vllm"
chips = [8, 9, 10, 11, 12, 13, 14, 15]
listen = %q
[auth]
mode = "api-key"
secret_file = %q
[media]
device_ids = "(0,1),(2,3),(4,5),(6,7)"
[vllm]
port = %s
# This host has no Tenstorrent chips; the fake docker needs none.
host_checks = "warn"
`, addr, secret, upPort)
	u := startUnitFile(t, filepath.Join(dir, "sdxl-t3k.toml"), addr, text)
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSpace(string(raw)), "\n")
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"run --rm --name ttis-sdxl-t3k --env-file ", "/secrets.env --ipc host",
		"--device /dev/tenstorrent/8:/dev/tenstorrent/8",
		"--device /dev/tenstorrent/15:/dev/tenstorrent/15",
		"--mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G",
		"--publish 127.0.0.1:" + upPort + ":8000",
		"-e MODEL=stable-diffusion-xl-base-1.0", "-e DEVICE=t3k", "-e MODEL_RUNNER=tt-sdxl-trace",
		"-e DEVICE_IDS=(8,9),(10,11),(12,13),(14,15)", "-e DEVICE_MESH_SHAPE=2,1",
		"ghcr.io/tenstorrent/tt-media-inference-server",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("docker argv lacks %q:\n%s", want, joined)
		}
	}
	// The container's key travels in the env file only (read by the fake
	// docker, which gives it to the inner server that checks it).
	if strings.Contains(joined, "API_KEY") {
		t.Errorf("the container's key is in docker's argv:\n%s", joined)
	}
	key, err := os.ReadFile(filepath.Join(os.Getenv("FAKE_DOCKER_DIR"), "key"))
	if err != nil || !bytes.HasPrefix(key, []byte("ttis-")) {
		t.Fatalf("the container got no key from the env file: %q %v", key, err)
	}
	if strings.Contains(u.log.String(), string(bytes.TrimSpace(key))) {
		t.Error("the container's key is in the log")
	}
	if strings.Contains(joined, "--model") || strings.Contains(joined, "--tt-device") || strings.Contains(joined, "--no-auth") {
		t.Errorf("docker argv carries vLLM flags:\n%s", joined)
	}
	if strings.Contains(u.log.String(), "API_KEY=ttis-") {
		t.Error("the container's key is in the log")
	}
	code, _, body := u.request("POST", "/v1/images/generations", `{"prompt":"x","size":"512x512"}`)
	if code != 401 {
		t.Fatalf("no key: %d %s", code, body)
	}
	code, _, body = u.request("POST", "/v1/images/generations", `{"prompt":"a harbour","size":"512x512","seed":5}`, "Authorization", "Bearer front-door-key")
	if code != 200 || !bytes.Contains(body, []byte(`"b64_json"`)) {
		t.Fatalf("image through the container: %d %.300s", code, body)
	}
	code, _, body = u.request("GET", "/tt-liveness", "")
	if code != 200 || !bytes.Contains(body, []byte(`"runner_in_use":"tt-sdxl-trace"`)) {
		t.Fatalf("liveness through the container: %d %s", code, body)
	}
	code, _, body = u.request("GET", "/metrics", "")
	if code != 200 || !bytes.Contains(body, []byte(`vllm:e2e_request_latency_seconds_count{model_name="stable-diffusion-xl-base-1.0",engine="0"} 1`)) {
		t.Fatalf("metrics: %d %s", code, body)
	}
	// The container's workers, read from its /tt-liveness, reach /health
	// for the daemon's status (the first poll runs right after the start).
	var workers string
	for i := 0; i < 100 && workers == ""; i++ {
		_, hdr, _ := u.request("GET", "/health", "")
		if workers = hdr.Get(runtime.HeaderWorkers); workers == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !regexp.MustCompile(`^[1-9][0-9]* workers: [1-9][0-9]* alive, [1-9][0-9]* ready, 0 restarts, 0 errors$`).MatchString(workers) {
		t.Errorf("/health %s = %q", runtime.HeaderWorkers, workers)
	}
}

// checkVideo submits a video job, waits (bounded) for it and checks the
// MP4: frames of 832x480 JPEG at 16 per second.
func checkVideo(t *testing.T, m *mediaServer, seconds int) []byte {
	t.Helper()
	code, body := m.postJSON("/v1/videos/generations", map[string]any{"prompt": "waves on a beach", "seed": 4, "duration_seconds": seconds, "num_inference_steps": 20})
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(body, &job); code != 202 || err != nil || job.ID == "" || job.Object != "video" {
		t.Fatalf("submit: %d %s", code, body)
	}
	// Bounded: rendering the frames takes a second or two, more under -race.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		code, _, body = m.do("GET", "/v1/videos/generations/"+job.ID, "", nil)
		if err := json.Unmarshal(body, &job); code != 200 || err != nil {
			t.Fatalf("job: %d %s", code, body)
		}
		if job.Status != "queued" && job.Status != "in_progress" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if job.Status != "completed" {
		t.Fatalf("job ended %s", body)
	}
	code, hdr, mp4 := m.do("GET", "/v1/videos/generations/"+job.ID+"/download", "", nil)
	if code != 200 || hdr.Get("Content-Type") != "video/mp4" {
		t.Fatalf("download: %d %.200s", code, mp4)
	}
	frames, err := media.MP4Frames(mp4)
	if err != nil || len(frames) != 16*seconds {
		t.Fatalf("%d frames, %v", len(frames), err)
	}
	img, err := jpeg.Decode(bytes.NewReader(frames[len(frames)-1]))
	if err != nil || img.Bounds().Dx() != 832 || img.Bounds().Dy() != 480 {
		t.Fatalf("last frame: %v %v", img.Bounds(), err)
	}
	return mp4
}

// TestVideoJobs covers the video job API: determinism per seed, listing,
// cancellation, unknown jobs and bad input.
func TestVideoJobs(t *testing.T) {
	m := startMedia(t, "Wan2.2-T2V-A14B-Diffusers", "t3k", "")
	a, b := checkVideo(t, m, 1), checkVideo(t, m, 1)
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different videos")
	}
	code, _, body := m.do("GET", "/v1/videos/jobs", "", nil)
	var jobs []map[string]any
	if err := json.Unmarshal(body, &jobs); code != 200 || err != nil || len(jobs) != 2 {
		t.Fatalf("jobs: %d %s", code, body)
	}
	code, _, body = m.do("GET", "/v1/videos/generations/video-nope", "", nil)
	checkMediaError(t, code, body, 404, "id")
	code, _, body = m.do("GET", "/v1/videos/generations/"+jobs[0]["id"].(string)+"/cancel", "", nil)
	if code != 405 {
		t.Fatalf("GET cancel: %d %s", code, body)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"prompt":""}`, "prompt"},
		{`{"prompt":"x","duration_seconds":0}`, "duration_seconds"},
		{`{"prompt":"x","duration_seconds":61}`, "duration_seconds"},
		{`{"prompt":"x","num_inference_steps":500}`, "num_inference_steps"},
		{`{"prompt":"x","aspect_ratio":"4:3"}`, "aspect_ratio"},
	} {
		code, _, body := m.do("POST", "/v1/videos/generations", "application/json", []byte(tc.body))
		checkMediaError(t, code, body, 400, tc.param)
	}
	// A slow job (about 2 s at this scale) is cancelled while it runs.
	slow := startMedia(t, "mochi-1-preview", "t3k", "[sim]\ntime_scale = 0.01\n")
	code, body = slow.postJSON("/v1/videos/generations", map[string]any{"prompt": "x"})
	var job struct{ ID, Status string }
	if err := json.Unmarshal(body, &job); code != 202 || err != nil {
		t.Fatalf("submit: %d %s", code, body)
	}
	code, body = slow.postJSON("/v1/videos/generations/"+job.ID+"/cancel", nil)
	if err := json.Unmarshal(body, &job); code != 200 || err != nil || job.Status != "cancelled" {
		t.Fatalf("cancel: %d %s", code, body)
	}
	code, _, body = slow.do("GET", "/v1/videos/generations/"+job.ID+"/download", "", nil)
	checkMediaError(t, code, body, 404, "id")
	// The cancelled job gave its slot back.
	for range 200 {
		if _, _, b := slow.do("GET", "/metrics", "", nil); bytes.Contains(b, []byte(`vllm:num_requests_running{model_name="mochi-1-preview",engine="0"} 0`)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the cancelled job still holds its slot")
}

// TestMediaRequestTimeout: limits.request_timeout ends a media request
// with 408, as it does a text one.
func TestMediaRequestTimeout(t *testing.T) {
	m := startMedia(t, "stable-diffusion-xl-base-1.0", "n150", "[limits]\nrequest_timeout = \"200ms\"\n[sim]\ntime_scale = 1\n")
	start := time.Now()
	code, body := m.postJSON("/v1/images/generations", map[string]any{"prompt": "slow"})
	if code != 408 || !bytes.Contains(body, []byte("limits.request_timeout")) || time.Since(start) > 5*time.Second {
		t.Fatalf("%d %s after %v", code, body, time.Since(start))
	}
}

// TestImageToImageAndEdits: the SDXL image-to-image and inpainting runners
// serve their own routes (JSON base64 or multipart, as OpenAI's
// images.edit sends), not /generations, and check their inputs.
func TestImageToImageAndEdits(t *testing.T) {
	i2i := startMedia(t, "stable-diffusion-xl-base-1.0-img-2-img", "n150", "")
	img := base64.StdEncoding.EncodeToString(testPNG(t))
	a := checkImages(t, i2i, "/v1/images/image-to-image", map[string]any{"prompt": "a cat", "image": img, "strength": 0.3, "seed": 1, "size": "512x512"}, 1)
	b := checkImages(t, i2i, "/image/image-to-image", map[string]any{"prompt": "a cat", "image": img, "strength": 0.9, "seed": 1, "size": "512x512"}, 1)
	if bytes.Equal(a[0], b[0]) {
		t.Error("strength changed nothing")
	}
	code, body := i2i.postJSON("/v1/images/generations", map[string]any{"prompt": "x"})
	if code != 404 || !bytes.Contains(body, []byte("image-to-image")) {
		t.Fatalf("generations on an image-to-image unit: %d %s", code, body)
	}
	for _, tc := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"prompt": "x"}, "image"},
		{map[string]any{"prompt": "x", "image": base64.StdEncoding.EncodeToString([]byte("not an image"))}, "image"},
		{map[string]any{"prompt": "x", "image": img, "strength": 2}, "strength"},
		{map[string]any{"prompt": "x", "image": img, "mask": img}, "mask"},
	} {
		code, body := i2i.postJSON("/v1/images/image-to-image", tc.body)
		checkMediaError(t, code, body, 400, tc.param)
	}
	edit := startMedia(t, "stable-diffusion-xl-1.0-inpainting-0.1", "n150", "")
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("prompt", "a hat")
	_ = w.WriteField("n", "2")
	_ = w.WriteField("size", "512x512")
	for _, name := range []string{"image", "mask"} {
		fw, _ := w.CreateFormFile(name, name+".png")
		_, _ = fw.Write(testPNG(t))
	}
	_ = w.Close()
	code, _, out := edit.do("POST", "/v1/images/edits", w.FormDataContentType(), buf.Bytes())
	if code != 200 || bytes.Count(out, []byte(`"b64_json"`)) != 2 {
		t.Fatalf("multipart edit: %d %.300s", code, out)
	}
	code, body = edit.postJSON("/v1/images/edits", map[string]any{"prompt": "x", "image": img})
	checkMediaError(t, code, body, 400, "mask")
	gen := startMedia(t, "stable-diffusion-xl-base-1.0", "n150", "")
	code, body = gen.postJSON("/v1/images/generations", map[string]any{"prompt": "x", "image": img})
	checkMediaError(t, code, body, 400, "image")
}
