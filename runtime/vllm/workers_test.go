package vllm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// livenessAnswer is a /tt-liveness answer in tt-media-server's shape
// (tt_maintenance_api.py liveness + base_service.py check_is_model_ready +
// scheduler.py get_worker_info): two workers, one restarted twice and not
// ready yet.
const livenessAnswer = `{"status":"alive","model_ready":true,"queue_size":0,"max_queue_size":5000,
"device_mesh_shape":[1,1],"device":"n300","runner_in_use":"tt-whisper","canary_alive":true,"canary_state":"disabled",
"worker_info":{"0":{"pid":4101,"is_alive":true,"start_time":1764200000.5,"is_ready":true,"restart_count":0,"error_count":0,"ready_time":1764200090.1},
"1":{"pid":4388,"is_alive":true,"start_time":1764200400.2,"is_ready":false,"restart_count":2,"error_count":1,"ready_time":null}}}`

func TestParseLiveness(t *testing.T) {
	w, err := ParseLiveness([]byte(livenessAnswer))
	if err != nil {
		t.Fatal(err)
	}
	if w != (Workers{Count: 2, Alive: 2, Ready: 1, Restarts: 2, Errors: 1}) {
		t.Errorf("workers = %+v", w)
	}
	if got := w.String(); got != "2 workers: 2 alive, 1 ready, 2 restarts, 1 errors" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{``, `[]`, `{"status":"alive"}`, `{"worker_info":{"0":{"is_alive":"yes"}}}`} {
		if _, err := ParseLiveness([]byte(bad)); err == nil {
			t.Errorf("ParseLiveness(%q) accepted", bad)
		}
	}
}

func FuzzParseLiveness(f *testing.F) {
	f.Add([]byte(livenessAnswer))
	f.Add([]byte(`{"worker_info":{}}`))
	f.Add([]byte(`{"worker_info":{"0":{"restart_count":-5}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseLiveness(b)
		if err != nil {
			return
		}
		if w.Alive > w.Count || w.Ready > w.Count || w.Restarts < 0 || w.Errors < 0 {
			t.Errorf("inconsistent %+v", w)
		}
	})
}

// TestWorkerWatch polls a fake upstream and keeps the last good answer
// when a later poll fails.
func TestWorkerWatch(t *testing.T) {
	answer := livenessAnswer
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tt-liveness" || answer == "" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(answer))
	}))
	defer up.Close()
	addr := strings.TrimPrefix(up.URL, "http://")
	var ww workerWatch
	s := &Server{workers: &ww}
	if s.Workers() != "" {
		t.Errorf("workers before the first poll: %q", s.Workers())
	}
	ww.poll(addr, time.Second)
	if got := s.Workers(); !strings.HasPrefix(got, "2 workers: 2 alive, 1 ready, 2 restarts") {
		t.Errorf("after a poll: %q", got)
	}
	answer = ""
	ww.poll(addr, time.Second)
	if got := s.Workers(); !strings.HasPrefix(got, "2 workers:") {
		t.Errorf("a failed poll lost the last answer: %q", got)
	}
	if (&Server{}).Workers() != "" {
		t.Error("a vLLM server reports workers")
	}
	done := make(chan struct{})
	close(done)
	ww.run(addr, time.Hour, done) // returns at once: done is closed
}
