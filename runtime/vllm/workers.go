package vllm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Workers sums up tt-media-server's device workers as its GET /tt-liveness
// reports them: "worker_info" maps a worker id to {"pid", "is_alive",
// "start_time", "is_ready", "restart_count", "error_count", "ready_time"}
// (tt-media-server/model_services/scheduler.py get_worker_info, lines
// 651-664, merged into the answer by base_service.py check_is_model_ready,
// lines 88-109, and open_ai_api/tt_maintenance_api.py liveness, lines
// 14-32). The server restarts a dead worker itself (scheduler.py
// restart_worker, lines 233-268), so its process stays up and only these
// counts show it.
type Workers struct {
	Count    int
	Alive    int
	Ready    int
	Restarts int
	Errors   int
}

// String is the one line `ttisctl status` shows.
func (w Workers) String() string {
	return fmt.Sprintf("%d workers: %d alive, %d ready, %d restarts, %d errors", w.Count, w.Alive, w.Ready, w.Restarts, w.Errors)
}

// maxLivenessBody bounds what a /tt-liveness answer may take.
const maxLivenessBody = 1 << 20

// ParseLiveness reads the workers out of a /tt-liveness answer.
func ParseLiveness(body []byte) (Workers, error) {
	var v struct {
		WorkerInfo map[string]struct {
			IsAlive      bool `json:"is_alive"`
			IsReady      bool `json:"is_ready"`
			RestartCount int  `json:"restart_count"`
			ErrorCount   int  `json:"error_count"`
		} `json:"worker_info"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return Workers{}, fmt.Errorf("tt-liveness answer: %w", err)
	}
	if v.WorkerInfo == nil {
		return Workers{}, fmt.Errorf("tt-liveness answer has no worker_info")
	}
	var w Workers
	for _, i := range v.WorkerInfo {
		w.Count++
		if i.IsAlive {
			w.Alive++
		}
		if i.IsReady {
			w.Ready++
		}
		if i.RestartCount > 0 {
			w.Restarts += i.RestartCount
		}
		if i.ErrorCount > 0 {
			w.Errors += i.ErrorCount
		}
	}
	return w, nil
}

// workerWatch polls a media server's /tt-liveness and keeps the last
// answer's workers.
type workerWatch struct {
	last atomic.Pointer[Workers]
}

// livenessClient talks to the loopback upstream only; no proxy applies.
var livenessClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// run polls http://addr/tt-liveness every interval until done closes. A
// failed poll keeps the last known workers: the unit's health check, not
// this, decides whether the server is alive.
func (w *workerWatch) run(addr string, interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		w.poll(addr, interval)
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

func (w *workerWatch) poll(addr string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/tt-liveness", nil)
	if err != nil {
		return
	}
	resp, err := livenessClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLivenessBody))
	if err != nil || resp.StatusCode != http.StatusOK {
		return
	}
	if ws, err := ParseLiveness(body); err == nil {
		w.last.Store(&ws)
	}
}

// Workers is the media server's last reported workers in one line, or ""
// for a vLLM server or before the first answer.
func (s *Server) Workers() string {
	if s.workers == nil {
		return ""
	}
	if w := s.workers.last.Load(); w != nil {
		return w.String()
	}
	return ""
}
