package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/backend"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/runtime/media"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// hubAudio is the Parquet layout of Hugging Face's Audio feature.
type hubAudio struct {
	Bytes []byte  `parquet:"bytes"`
	Path  *string `parquet:"path,optional"`
}

// libriRow is lmms-lab/librispeech's Parquet schema.
type libriRow struct {
	Audio  hubAudio `parquet:"audio"`
	GT     string   `parquet:"gt"`
	Source string   `parquet:"source"`
	Task   string   `parquet:"task"`
}

// stsRow is mteb/sts12-sts's Parquet schema.
type stsRow struct {
	Split     string  `parquet:"split"`
	Genre     string  `parquet:"genre"`
	Dataset   string  `parquet:"dataset"`
	Year      string  `parquet:"year"`
	Sid       string  `parquet:"sid"`
	Score     float64 `parquet:"score"`
	Sentence1 string  `parquet:"sentence1"`
	Sentence2 string  `parquet:"sentence2"`
}

// clip is a distinct short 16 kHz WAV per index.
func clip(i int) []byte {
	s := make([]int16, 1600+160*i)
	for j := range s {
		s[j] = int16((j*(i+3))%2000 - 1000)
	}
	return media.WAV(s, 16000, 1)
}

var libriGold = []string{
	"HE HOPED THERE WOULD BE STEW FOR DINNER TURNIPS AND CARROTS",
	"STUFF IT INTO YOU HIS BELLY COUNSELLED HIM",
	"AFTER EARLY NIGHTFALL THE YELLOW LAMPS WOULD LIGHT UP HERE AND THERE",
}

func libriParquet(t *testing.T) string {
	rows := make([]libriRow, len(libriGold))
	for i, g := range libriGold {
		p := fmt.Sprintf("%d.wav", i)
		rows[i] = libriRow{Audio: hubAudio{Bytes: clip(i), Path: &p}, GT: g, Source: "librispeech_test_other", Task: "asr_en"}
	}
	return writeParquet(t, rows)
}

// transcriptionServer answers POST /v1/audio/transcriptions with
// reply(clip) and records each request body.
func transcriptionServer(t *testing.T, reply func(clip []byte) string) (string, *[][]byte) {
	t.Helper()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
		mu.Lock()
		bodies = append(bodies, raw)
		mu.Unlock()
		if r.URL.Path != "/v1/audio/transcriptions" {
			http.NotFound(w, r)
			return
		}
		var body struct {
			File string `json:"file"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		audio, err := base64.StdEncoding.DecodeString(body.File)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"text": reply(audio), "duration": 1.0, "segments": []any{}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &bodies
}

func runMedia(t *testing.T, task *evalsuite.Task, url string) *runner.Result {
	t.Helper()
	srv, err := openai.New(openai.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	be, err := backend.New(srv, backend.Config{Model: "whisper-large-v3"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, be, runner.Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLibriSpeechRequestGolden pins the request whisper_tt's way of asking
// produces: JSON with the clip base64-encoded in "file" and stream false.
func TestLibriSpeechRequestGolden(t *testing.T) {
	task, err := Build("librispeech_test_other", Source{Dataset: libriParquet(t), NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	task.Docs = task.Docs[:1]
	url, bodies := transcriptionServer(t, func([]byte) string { return "x" })
	runMedia(t, task, url)
	if len(*bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(*bodies))
	}
	want := `{"model":"whisper-large-v3","file":"` + base64.StdEncoding.EncodeToString(clip(0)) + `","stream":false}`
	if got := string((*bodies)[0]); got != want {
		t.Errorf("request body:\n%.200s\nwant\n%.200s", got, want)
	}
}

func TestLibriSpeechOracle(t *testing.T) {
	task, err := Build("librispeech_test_other", Source{Dataset: libriParquet(t), NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	gold := map[[32]byte]string{}
	for i, g := range libriGold {
		gold[sha256.Sum256(clip(i))] = g
	}
	// The gold oracle answers as Whisper writes: mixed case, punctuation,
	// an end-of-text token whisper_tt cuts at.
	right := func(c []byte) string {
		g := gold[sha256.Sum256(c)]
		return strings.ToUpper(g[:1]) + strings.ToLower(g[1:]) + ".<|endoftext|> trailing"
	}
	res := runMedia(t, task, mustURL(transcriptionServer(t, right)))
	if wer := aggregateKeys(res.Aggregates)["wer,none"]; wer != 0 {
		t.Errorf("gold oracle: wer %v, want 0", wer)
	}
	wrong := func([]byte) string { return "nothing like it at all" }
	res = runMedia(t, task, mustURL(transcriptionServer(t, wrong)))
	// 5 substitutions and the rest deleted: every reference word is an
	// error (33 words in all).
	if wer := aggregateKeys(res.Aggregates)["wer,none"]; wer != 100 {
		t.Errorf("wrong oracle: wer %v, want 100", wer)
	}
	// A server that fails counts every reference word as deleted.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusBadRequest)
	}))
	defer failing.Close()
	res = runMedia(t, task, failing.URL)
	if res.Errors.Errored != 3 || aggregateKeys(res.Aggregates)["wer,none"] != 100 {
		t.Errorf("failing server: %d errored, wer %v; want 3 and 100", res.Errors.Errored, aggregateKeys(res.Aggregates)["wer,none"])
	}
}

func mustURL(u string, _ *[][]byte) string { return u }

func TestAudioBytes(t *testing.T) {
	wav := clip(1)
	for _, v := range []any{map[string]any{"bytes": string(wav)}, map[string]any{"bytes": base64.StdEncoding.EncodeToString(wav)}} {
		got, err := AudioBytes(v)
		if err != nil || string(got) != string(wav) {
			t.Errorf("%T: %v", v, err)
		}
	}
	if _, err := AudioBytes(map[string]any{"bytes": "fLaC\x00\x00\x00\x22rest"}); err == nil || !strings.Contains(err.Error(), "FLAC") {
		t.Errorf("broken FLAC: %v", err)
	}
	if _, err := AudioBytes(map[string]any{"path": "a.wav"}); err == nil || !strings.Contains(err.Error(), "no bytes") {
		t.Errorf("path only: %v", err)
	}
	if _, err := AudioBytes(map[string]any{"bytes": "plain text, not audio"}); err == nil {
		t.Error("text accepted as audio")
	}
}

var stsRows = []stsRow{
	{Score: 5, Sentence1: "A man is playing a guitar.", Sentence2: "A man plays the guitar."},
	{Score: 0.5, Sentence1: "A cat sleeps.", Sentence2: "The stock market fell sharply."},
	{Score: 3.2, Sentence1: "Kids play football in the park.", Sentence2: "Children are playing soccer outside."},
	{Score: 1.8, Sentence1: "A woman is slicing onions.", Sentence2: "A woman is cutting a tomato."},
	{Score: 4.1, Sentence1: "The plane landed on time.", Sentence2: "The flight arrived as scheduled."},
}

// embeddingServer answers /v1/embeddings with vec(input) for each input.
func embeddingServer(t *testing.T, vec func(text string) []float64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		data := make([]any, len(body.Input))
		for i, s := range body.Input {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vec(s)}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSTS12Oracle(t *testing.T) {
	task, err := Build("embedding", Source{Dataset: writeParquet(t, stsRows), NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The oracle puts each pair's sentences at an angle whose cosine
	// follows the gold score: sentence1 on the x axis, sentence2 at
	// angle (5 − score)/5 · π/2.
	angle := map[string]float64{}
	for _, r := range stsRows {
		angle[r.Sentence2] = (5 - r.Score) / 5 * math.Pi / 2
	}
	right := func(s string) []float64 {
		a, ok := angle[s]
		if !ok {
			return []float64{1, 0, 0}
		}
		return []float64{math.Cos(a), math.Sin(a), 0}
	}
	res := runMedia(t, task, embeddingServer(t, right))
	if got := aggregateKeys(res.Aggregates)["cosine_spearman,none"]; math.Abs(got-1) > 1e-12 {
		t.Errorf("oracle: cosine_spearman %v, want 1", got)
	}
	// The reverse oracle ranks every pair backwards.
	reverse := func(s string) []float64 {
		a, ok := angle[s]
		if !ok {
			return []float64{1, 0, 0}
		}
		a = math.Pi/2 - a
		return []float64{math.Cos(a), math.Sin(a), 0}
	}
	res = runMedia(t, task, embeddingServer(t, reverse))
	if got := aggregateKeys(res.Aggregates)["cosine_spearman,none"]; math.Abs(got+1) > 1e-12 {
		t.Errorf("reverse oracle: cosine_spearman %v, want -1", got)
	}
	// Vectors unrelated to meaning (a hash of the text) score far from 1.
	random := func(s string) []float64 {
		h := sha256.Sum256([]byte(s))
		v := make([]float64, 8)
		for i := range v {
			v[i] = float64(h[i]) - 127.5
		}
		return v
	}
	res = runMedia(t, task, embeddingServer(t, random))
	if got := aggregateKeys(res.Aggregates)["cosine_spearman,none"]; got > 0.9 {
		t.Errorf("random embeddings: cosine_spearman %v, want far below 1", got)
	}
}

// libriTTSRow is blabble-io/libritts_r's Parquet schema (config clean),
// without its audio column, which the task does not read.
type libriTTSRow struct {
	TextNormalized string `parquet:"text_normalized"`
	TextOriginal   string `parquet:"text_original"`
	SpeakerID      string `parquet:"speaker_id"`
	ID             string `parquet:"id"`
}

func TestTTSWER(t *testing.T) {
	for _, tt := range []struct {
		ref, hyp string
		want     float64
	}{
		{"The quick, brown fox!", "the quick brown fox", 0},
		{"It's four o'clock.", "its four o'clock", 1.0 / 3}, // apostrophes are kept
		{"a b c d", "", 1},
		{"a b", "x y z w v", 1}, // capped at 1
		{"", "", 0},
		{"", "noise", 1},
	} {
		if got := ttsWER(tt.ref, tt.hyp); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("ttsWER(%q, %q) = %v, want %v", tt.ref, tt.hyp, got, tt.want)
		}
	}
}

// speechServers starts a TTS server whose WAV carries the text's bytes as
// samples and an ASR server that answers reply(text read back from the
// WAV); the TTS server records its request bodies.
func speechServers(t *testing.T, reply func(said string) string) (tts, asr string, bodies *[]string) {
	t.Helper()
	var mu sync.Mutex
	bodies = new([]string)
	ttsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		*bodies = append(*bodies, string(raw))
		mu.Unlock()
		var body struct {
			Text string `json:"text"`
		}
		if r.URL.Path != "/v1/audio/speech" || json.Unmarshal(raw, &body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s := make([]int16, len(body.Text))
		for i := range body.Text {
			s[i] = int16(body.Text[i])
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"audio": base64.StdEncoding.EncodeToString(media.WAV(s, 16000, 1)), "duration": 0.1, "sample_rate": 16000, "format": "wav"})
	}))
	t.Cleanup(ttsSrv.Close)
	asrURL, _ := transcriptionServer(t, func(clip []byte) string {
		pcm := clip[44:]
		said := make([]byte, len(pcm)/2)
		for i := range said {
			said[i] = pcm[2*i]
		}
		return reply(string(said))
	})
	return ttsSrv.URL, asrURL, bodies
}

func runTTS(t *testing.T, task *evalsuite.Task, ttsURL, asrURL string) *runner.Result {
	t.Helper()
	srv, err := openai.New(openai.Config{BaseURL: ttsURL})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	asr, err := openai.New(openai.Config{BaseURL: asrURL})
	if err != nil {
		t.Fatal(err)
	}
	defer asr.Close()
	be, err := backend.New(srv, backend.Config{Model: "speecht5_tts", ASR: asr, ASRModel: "whisper-large-v3"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, be, runner.Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTTSGenerationOracle(t *testing.T) {
	var rows []libriTTSRow
	for i := range 12 {
		rows = append(rows, libriTTSRow{TextOriginal: fmt.Sprintf("Sentence number %d, said clearly.", i), ID: fmt.Sprint(i)})
	}
	task, err := Build("tts_generation", Source{Dataset: writeParquet(t, rows), NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != ttsSamples {
		t.Fatalf("%d texts, want TTSQualityTest's first %d", len(task.Docs), ttsSamples)
	}
	ttsURL, asrURL, bodies := speechServers(t, func(said string) string { return strings.ToUpper(said) })
	res := runTTS(t, task, ttsURL, asrURL)
	if got := aggregateKeys(res.Aggregates); got["intelligibility,none"] != 1 || got["wer,none"] != 0 {
		t.Errorf("speech heard back exactly: %v", got)
	}
	if want := `{"model":"speecht5_tts","response_format":"verbose_json","text":"Sentence number 0, said clearly."}`; !slices.Contains(*bodies, want) {
		t.Errorf("speech request bodies %q lack %s", *bodies, want)
	}
	ttsURL, asrURL, _ = speechServers(t, func(string) string { return "mumble" })
	res = runTTS(t, task, ttsURL, asrURL)
	if got := aggregateKeys(res.Aggregates); got["intelligibility,none"] != 0 || got["wer,none"] != 1 {
		t.Errorf("unintelligible speech: %v", got)
	}
	// Without a speech-recognition server the request fails (the
	// workflow refuses the task before it gets here).
	srv, _ := openai.New(openai.Config{BaseURL: ttsURL})
	defer srv.Close()
	be, _ := backend.New(srv, backend.Config{Model: "speecht5_tts"})
	if _, _, err := be.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindSpeechASR, Context: "x"}); err == nil || !strings.Contains(err.Error(), "--asr-url") {
		t.Errorf("no ASR: %v", err)
	}
}
