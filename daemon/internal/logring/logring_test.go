package logring

import (
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
	tail, ch, cancel := r.Follow(1, 8)
	if got := texts(tail); got != "b," {
		t.Fatalf("tail = %q", got)
	}
	r.Add(api.LogLine{Text: "c"})
	if l := <-ch; l.Text != "c" {
		t.Fatalf("followed %q, want c", l.Text)
	}
	cancel()
	cancel() // idempotent
	if _, ok := <-ch; ok {
		t.Fatal("channel still open after cancel")
	}
	r.Add(api.LogLine{Text: "d"}) // must not panic on a closed follower
}

func TestSlowFollowerDoesNotBlock(t *testing.T) {
	r := New(2)
	_, _, cancel := r.Follow(0, 1)
	defer cancel()
	for i := range 100 {
		r.Add(api.LogLine{Text: fmt.Sprint(i)})
	}
	if got := texts(r.Tail(0)); got != "98,99," {
		t.Fatalf("tail = %q", got)
	}
}
