package media

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/catalog"
)

func client(t *testing.T, h http.HandlerFunc) *openai.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Failed requests are counted and make the point incomplete, never a pass.
func TestFailedRequests(t *testing.T) {
	spec, err := catalog.Lookup("stable-diffusion-xl-base-1.0", "n150")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	c := client(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, `{"error":{"message":"device hung"}}`, 500)
			return
		}
		w.Write([]byte(`{"images":["aGk="]}`))
	})
	p, err := Run(context.Background(), Config{Client: c, Model: "m", Spec: spec, Concurrency: 1, Requests: 4})
	if err != nil {
		t.Fatal(err)
	}
	if p.Completed != 2 || p.Failed != 2 || len(p.Errors) != 2 || p.Grade.Status != grade.StatusError || p.SecondsPerImage == nil {
		t.Fatalf("%+v", p)
	}
}

// The graded rate is named for the task in checks and blockers.
func TestGradeNamesTheRate(t *testing.T) {
	spec, err := catalog.Lookup("whisper-large-v3", "n150")
	if err != nil {
		t.Fatal(err)
	}
	slow, late := 0.1, 50000.0
	p := &Point{TTFTms: &late, UserRate: &slow, RateName: "rtr", Completed: 2}
	g := gradePoint(spec, "audio", taskTarget(spec), p)
	if g.Status != grade.StatusFail || len(g.Blockers) == 0 || !strings.Contains(strings.Join(g.Blockers, " "), "rtr") {
		t.Fatalf("%+v", g)
	}
	for _, tier := range g.Tiers {
		for _, c := range tier.Checks {
			if c.Metric == "tput_user" {
				t.Fatalf("check still named tput_user: %+v", c)
			}
		}
	}
	if _, err := Run(context.Background(), Config{Client: client(t, nil), Spec: &catalog.Spec{ModelType: "LLM"}}); err == nil {
		t.Fatal("an LLM was benchmarked as media")
	}
}
