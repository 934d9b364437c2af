package runs

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRewrite(t *testing.T) {
	s := &Store{Root: filepath.Join(t.TempDir(), "runs")}
	r, err := s.Create(Manifest{Unit: "u", Model: "M", Workflow: "release"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewrite(context.Background(), r.ID()); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("rewrite of a running run: %v", err)
	}
	if err := r.Finish(StatusComplete, "FAIL", ""); err != nil {
		t.Fatal(err)
	}
	before := r.Manifest()
	w, err := s.Rewrite(context.Background(), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("report.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.SetVerdict("PASS"); err != nil {
		t.Fatal(err)
	}
	after, _, err := s.Open(context.Background(), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if after.Verdict != "PASS" || after.Status != StatusComplete || !after.Finished.Equal(*before.Finished) || after.PID != before.PID {
		t.Errorf("manifest after a rewrite: %+v (before %+v)", after, before)
	}
}
