package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHealth(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || r.Header.Get("Authorization") != "Bearer k" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status) // vLLM answers 200 with an empty body
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Health(context.Background()); err != nil {
		t.Errorf("ready server: %v", err)
	}
	status = http.StatusServiceUnavailable
	var e *Error
	if err := c.Health(context.Background()); !errors.As(err, &e) || e.Kind != KindHTTP || e.Status != 503 {
		t.Errorf("loading server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	down, err := New(Config{BaseURL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if err := down.Health(context.Background()); !errors.As(err, &e) || e.Kind != KindTransport {
		t.Errorf("nothing listening: %v", err)
	}
}
