package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// mediaBackend answers every request with a fake image.
type mediaBackend struct{ calls atomic.Int32 }

func (b *mediaBackend) Do(_ context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	b.calls.Add(1)
	return evalsuite.Response{Media: []byte("IMAGE OF " + inst.Context), Text: "image"}, nil, nil
}
func (b *mediaBackend) Model() string   { return "m" }
func (b *mediaBackend) API() openai.API { return openai.Completions }

// TestMeasureBeforeCache: a media answer is measured before it is cached
// and scored, the bytes are dropped, a resumed run reads the measurement
// from the cache without measuring again, and a failed measurement is the
// sample's error.
func TestMeasureBeforeCache(t *testing.T) {
	var measured atomic.Int32
	task := &evalsuite.Task{Name: "m", Output: evalsuite.Media,
		Docs: []evalsuite.Doc{{ID: 0, Source: "d:0", Fields: map[string]any{"p": "cat"}}, {ID: 1, Source: "d:1", Fields: map[string]any{"p": "bad"}}},
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			p, _ := d.Str("p")
			return []evalsuite.Instance{{Kind: evalsuite.KindImage, Context: p}}, nil
		},
		Measure: func(_ context.Context, inst evalsuite.Instance, r *evalsuite.Response) error {
			measured.Add(1)
			if inst.Context == "bad" {
				return errors.New("undecodable image")
			}
			r.Embeddings = [][]float64{{float64(len(r.Media))}}
			return nil
		},
		ProcessMedia: func(d evalsuite.Doc, r []evalsuite.Response) (evalsuite.Scores, error) {
			if len(r[0].Media) != 0 {
				t.Error("the media reached scoring")
			}
			return evalsuite.Scores{"len": {r[0].Embeddings[0][0]}}, nil
		},
		Metrics: []evalsuite.MetricSpec{{Name: "len", Aggregation: "mean"}},
	}
	dir := t.TempDir()
	cache, err := runner.OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	be := &mediaBackend{}
	res, err := runner.Run(context.Background(), task, be, runner.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples[0].Err != nil || res.Samples[0].Scored[0].Scores["len"][0] != float64(len("IMAGE OF cat")) {
		t.Fatalf("sample 0: %+v", res.Samples[0])
	}
	if e := res.Samples[1].Err; e == nil || e.Kind != "measure" || !strings.Contains(e.Message, "undecodable image") {
		t.Fatalf("sample 1: %+v", e)
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "IMAGE OF") {
				t.Errorf("%s holds the media bytes", p)
			}
		}
		return nil
	})
	calls, meas := be.calls.Load(), measured.Load()
	if _, err := runner.Run(context.Background(), task, be, runner.Options{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	// Only the failed sample is asked and measured again.
	if be.calls.Load() != calls+1 || measured.Load() != meas+1 {
		t.Errorf("resumed run: %d requests, %d measurements, want 1 each", be.calls.Load()-calls, measured.Load()-meas)
	}
}

// The weights a task measures with key the cache: answers measured with
// other weights are asked again.
func TestMeasurementKeysTheCache(t *testing.T) {
	a := evalsuite.Instance{Kind: evalsuite.KindImage, Context: "cat", Measurement: "clip@1"}
	b := a
	b.Measurement = "clip@2"
	if runner.Key("t", "d", "m", "completions", a) == runner.Key("t", "d", "m", "completions", b) {
		t.Error("the measurement does not key the cache")
	}
}
