package logring

import (
	"context"
	"fmt"
	"testing"

	"github.com/ttis-dev/ttis/daemon/api"
)

func texts(ls []api.LogLine) string {
	s := ""
	for _, l := range ls {
		s += l.Text + ","
	}
	return s
}

func TestTail(t *testing.T) {
	tests := []struct {
		size, added, n int
		want           string
	}{
		{size: 3, added: 0, n: 5, want: ""},
		{size: 3, added: 2, n: 0, want: "0,1,"},
		{size: 3, added: 3, n: 2, want: "1,2,"},
		{size: 3, added: 5, n: 0, want: "2,3,4,"},
		{size: 3, added: 7, n: 1, want: "6,"},
		{size: 1, added: 4, n: 9, want: "3,"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("size%d_added%d_n%d", tt.size, tt.added, tt.n), func(t *testing.T) {
			r := New(tt.size)
			for i := range tt.added {
				r.Add(api.LogLine{Text: fmt.Sprint(i)})
			}
			if got := texts(r.Tail(tt.n)); got != tt.want {
				t.Errorf("Tail(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestFollow(t *testing.T) {
	r := New(4)
	r.Add(api.LogLine{Text: "a"})
	r.Add(api.LogLine{Text: "b"})
	tail, f := r.Follow(1)
	if got := texts(tail); got != "b," {
		t.Fatalf("tail = %q", got)
	}
	buf := make([]api.LogLine, 2)
	n, lost, wake := f.Read(buf)
	if n != 0 || lost != 0 || wake == nil {
		t.Fatalf("Read before a new line = %d, %d, %v; want 0, 0 and a wake channel", n, lost, wake)
	}
	r.Add(api.LogLine{Text: "c"})
	select {
	case <-wake.Done():
	default:
		t.Fatal("Add did not wake the follower")
	}
	r.Add(api.LogLine{Text: "d"})
	r.Add(api.LogLine{Text: "e"})
	// A buffer smaller than what waits: two reads, in order.
	if n, lost, _ := f.Read(buf); n != 2 || lost != 0 || texts(buf[:n]) != "c,d," {
		t.Fatalf("first Read = %q (%d lost)", texts(buf[:n]), lost)
	}
	if n, lost, _ := f.Read(buf); n != 1 || lost != 0 || texts(buf[:n]) != "e," {
		t.Fatalf("second Read = %q (%d lost)", texts(buf[:n]), lost)
	}
}

// A follower that falls behind by more than the ring holds loses the
// oldest lines, is told how many, and never blocks Add.
func TestSlowFollowerLosesOldestLines(t *testing.T) {
	r := New(3)
	_, f := r.Follow(0)
	for i := range 10 {
		r.Add(api.LogLine{Text: fmt.Sprint(i)})
	}
	buf := make([]api.LogLine, 8)
	n, lost, wake := f.Read(buf)
	if lost != 7 || wake != nil || texts(buf[:n]) != "7,8,9," {
		t.Fatalf("Read after falling behind = %q, %d lost, wake %v; want 7,8,9 and 7 lost", texts(buf[:n]), lost, wake)
	}
	if n, lost, wake := f.Read(buf); n != 0 || lost != 0 || wake == nil {
		t.Fatalf("Read when caught up = %d lines, %d lost, wake %v", n, lost, wake)
	}
}

// Many followers share one wake channel, and a ring nobody follows makes
// none.
func TestFollowersShareOneWake(t *testing.T) {
	r := New(4)
	for range 100 {
		r.Add(api.LogLine{Text: "x"})
	}
	if r.wake != nil {
		t.Fatal("a ring without followers made a wake channel")
	}
	buf := make([]api.LogLine, 1)
	var wakes []context.Context
	for range 3 {
		_, f := r.Follow(0)
		_, _, w := f.Read(buf)
		wakes = append(wakes, w)
	}
	if wakes[0] != wakes[1] || wakes[1] != wakes[2] {
		t.Fatal("followers waiting for the same line got different channels")
	}
	r.Add(api.LogLine{Text: "y"})
	for i, w := range wakes {
		select {
		case <-w.Done():
		default:
			t.Fatalf("follower %d not woken", i)
		}
	}
}

func BenchmarkAddWithFollowers(b *testing.B) {
	r := New(1000)
	buf := make([]api.LogLine, 16)
	fs := make([]*Follower, 1000)
	for i := range fs {
		_, fs[i] = r.Follow(0)
	}
	l := api.LogLine{Stream: "stdout", Text: "a line of output"}
	b.ReportAllocs()
	for b.Loop() {
		r.Add(l)
		for _, f := range fs {
			f.Read(buf)
		}
	}
}
