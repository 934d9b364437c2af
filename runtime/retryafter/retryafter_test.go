package retryafter

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		v     string
		limit time.Duration
		want  time.Duration
		ok    bool
	}{
		{"", time.Minute, 0, false},
		{"   ", time.Minute, 0, false},
		{"0", time.Minute, 0, true},
		{"5", time.Minute, 5 * time.Second, true},
		{" 7 ", time.Minute, 7 * time.Second, true},
		{"120", time.Minute, time.Minute, true},
		{"3600", 24 * time.Hour, time.Hour, true},
		{"99999999999999999999999", time.Minute, time.Minute, true},
		{"9223372036854775807", 24 * time.Hour, 24 * time.Hour, true},
		{"-5", time.Minute, 0, false},
		{"+5", time.Minute, 0, false},
		{"1.5", time.Minute, 0, false},
		{"1e3", time.Minute, 0, false},
		{"soon", time.Minute, 0, false},
		{"5", 0, 0, true},
		{"5", -time.Second, 0, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", time.Minute, 30 * time.Second, true},
		{"Sun, 01 Mar 2026 13:00:00 GMT", time.Minute, time.Minute, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", time.Minute, 0, true},
		{"Sunday, 01-Mar-26 12:00:10 GMT", time.Minute, 10 * time.Second, true},
		{"Sun Mar  1 12:00:20 2026", time.Minute, 20 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30", time.Minute, 0, false},
	} {
		got, ok := Parse(c.v, now, c.limit)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q, limit %v) = %v, %v; want %v, %v", c.v, c.limit, got, ok, c.want, c.ok)
		}
	}
}

// Whatever the header says, the wait lies in [0, limit], and a value read
// as seconds is read the same with or without surrounding blanks.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0", "5", "120", "-1", "1.5", "99999999999999999999", "Sun, 01 Mar 2026 12:00:30 GMT", "Sun Mar  1 12:00:20 2026", "Sunday, 01-Mar-26 12:00:10 GMT"} {
		f.Add(s, int64(time.Minute))
	}
	f.Fuzz(func(t *testing.T, v string, limitNs int64) {
		limit := time.Duration(limitNs)
		got, ok := Parse(v, now, limit)
		if got < 0 || got > max(limit, 0) {
			t.Fatalf("Parse(%q, %v) = %v, outside [0, limit]", v, limit, got)
		}
		if !ok && got != 0 {
			t.Fatalf("Parse(%q, %v) = %v, not ok", v, limit, got)
		}
		again, ok2 := Parse(" "+strings.TrimSpace(v)+"\t", now, limit)
		if again != got || ok2 != ok {
			t.Fatalf("Parse(%q) = %v, %v; with blanks %v, %v", v, got, ok, again, ok2)
		}
	})
}
