package runs

import (
	"context"
	"fmt"
)

// Rewrite opens a finished run (found by Open's reference) to write its
// derived files again, as `ttisctl report --rebuild` rewrites the reports
// from the raw results: its status, times and process stay as they were;
// SetVerdict records a verdict that changed. A run still running is
// refused: its writer owns it.
func (s *Store) Rewrite(ctx context.Context, ref string) (*Run, error) {
	m, dir, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	if m.Status == StatusRunning {
		return nil, fmt.Errorf("run %s is still running (pid %d on %s): its reports are not final yet", m.ID, m.PID, m.Host)
	}
	return &Run{store: s, Dir: dir, m: m}, nil
}

// SetVerdict records the verdict of the run's reports in its manifest.
func (r *Run) SetVerdict(verdict string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.Verdict = verdict
	return r.save()
}
