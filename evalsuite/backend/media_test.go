package backend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// TestImageRequest: the fields go as JSON, the images base64 in their
// fields, the model beside them; the answer's first image comes back in
// Media.
func TestImageRequest(t *testing.T) {
	png := []byte("\x89PNG fake image")
	srv, last := recorder(t, `{"images":["`+base64.StdEncoding.EncodeToString(png)+`","second"]}`)
	be, _ := New(srv, Config{Model: "sdxl"})
	args := evalsuite.NewMediaArgs("/v1/images/image-to-image", map[string]any{"prompt": "a cat", "seed": 0, "strength": 0.6}, map[string][]byte{"image": []byte("src")})
	r, raw, err := be.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindImage, Media: args})
	if err != nil || string(r.Media) != string(png) || raw != nil || !strings.Contains(r.Text, "sha256:") {
		t.Fatalf("%+v %s %v", r, raw, err)
	}
	if b := *last; b["path"] != "/v1/images/image-to-image" || b["prompt"] != "a cat" || b["model"] != "sdxl" || b["strength"] != 0.6 || b["image"] != base64.StdEncoding.EncodeToString([]byte("src")) {
		t.Errorf("body %v", b)
	}
	// The JSON form names the image by digest, never its bytes.
	js, _ := json.Marshal(args)
	if strings.Contains(string(js), base64.StdEncoding.EncodeToString([]byte("src"))) || !strings.Contains(string(js), args.ImageSHA256["image"]) {
		t.Errorf("JSON form %s", js)
	}
	empty, _ := recorder(t, `{"images":[]}`)
	be, _ = New(empty, Config{Model: "sdxl"})
	if _, _, err := be.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindImage, Media: args}); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("empty answer: %v", err)
	}
	if _, _, err := be.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindImage}); err == nil {
		t.Error("an image request without its route was sent")
	}
}

func TestParseTop1(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"image_data":[{"top1_class_label":"coucal","top1_class_probability":"91.2%"}],"status":"success"}`, "coucal"},
		{`{"image_data":{"top1_class_label":"volcano"}}`, "volcano"},
		{`{"image_data":[{"output":{"labels":["mitten","glove"]}}]}`, "mitten"},
		{`{"image_data":[{"top1_class_label":7}]}`, "7"},
		{`{"image_data":[]}`, ""},
		{`{"image_data":[{"output":{"tabby cat":80.1}}]}`, ""},
	} {
		got, err := ParseTop1([]byte(tc.body))
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.body, got, err, tc.want)
		}
	}
	if _, err := ParseTop1([]byte(`{"image_data":"x"}`)); err == nil {
		t.Error("image_data as text accepted")
	}
}

func TestParseBoxes(t *testing.T) {
	got, err := ParseBoxes([]byte(`{"image_data":[{"output":{"boxes":[[1,2,30,40],[5,5,null,9],[0,0,3]],"scores":[0.9,0.8,0.7],"indices":[17,3,2]}}]}`))
	if err != nil || len(got) != 1 || got[0] != [6]float64{1, 2, 30, 40, 0.9, 17} {
		t.Fatalf("%v %v", got, err)
	}
	// A classifier's answer holds no boxes.
	if got, err := ParseBoxes([]byte(`{"image_data":[{"top1_class_label":"x","output":{"x":90}}]}`)); err != nil || len(got) != 0 {
		t.Errorf("%v %v", got, err)
	}
}

func FuzzParseMedia(f *testing.F) {
	f.Add([]byte(`{"image_data":[{"output":{"boxes":[[1,2,3,4]],"scores":[1],"indices":[0]}}]}`))
	f.Add([]byte(`{"images":["aGk="]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseImages(b)
		_, _ = ParseTop1(b)
		_, _ = ParseBoxes(b)
	})
}

// TestVideoJob: a video job is submitted (202), polled until completed
// and its MP4 downloaded; a failed job is an error with the server's
// message.
func TestVideoJob(t *testing.T) {
	var polls atomic.Int32
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/videos/generations":
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), `"num_inference_steps":40`) {
				t.Errorf("submit body %s", b)
			}
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"job1","status":"queued"}`)
		case r.URL.Path == "/v1/videos/generations/job1":
			answer := `{"id":"job1","status":"in_progress"}`
			if polls.Add(1) >= 2 {
				answer = `{"id":"job1","status":"completed"}`
				if fail.Load() {
					answer = `{"id":"job1","status":"failed","error":{"code":"generation_failed","message":"device lost"}}`
				}
			}
			_, _ = io.WriteString(w, answer)
		case r.URL.Path == "/v1/videos/generations/job1/download":
			w.Header().Set("Content-Type", "video/mp4")
			_, _ = io.WriteString(w, "MP4 BYTES")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.URL})
	be, _ := New(c, Config{Model: "wan"})
	inst := evalsuite.Instance{Kind: evalsuite.KindVideo, Media: evalsuite.NewMediaArgs("/v1/videos/generations", map[string]any{"prompt": "p", "num_inference_steps": 40}, nil)}
	r, _, err := be.Do(context.Background(), inst)
	if err != nil || string(r.Media) != "MP4 BYTES" {
		t.Fatalf("%+v %v", r, err)
	}
	fail.Store(true)
	polls.Store(0)
	if _, _, err := be.Do(context.Background(), inst); err == nil || !strings.Contains(err.Error(), "device lost") {
		t.Errorf("failed job: %v", err)
	}
}
