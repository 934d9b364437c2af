package units

import "testing"

// TestBaseURL: a wildcard listen host is dialled on loopback of its family;
// any other host as written.
func TestBaseURL(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"0.0.0.0:8000", "http://127.0.0.1:8000"},
		{":8000", "http://127.0.0.1:8000"},
		{"[::]:8000", "http://[::1]:8000"},
		{"[0:0::0]:8000", "http://[::1]:8000"},
		{"localhost:9", "http://localhost:9"},
		{"[::1]:7", "http://[::1]:7"},
		{"10.0.0.5:80", "http://10.0.0.5:80"},
	}
	for _, tt := range tests {
		got, err := BaseURL(tt.listen)
		if err != nil || got != tt.want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", tt.listen, got, err, tt.want)
		}
	}
	if _, err := BaseURL("no-port"); err == nil {
		t.Error("BaseURL without a port succeeded")
	}
}

// TestListenOverlap: the conflict check reads wildcards as DialAddress does.
func TestListenOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:80", "localhost:80", true},
		{"0.0.0.0:80", "127.0.0.1:80", true},
		{":80", "[::]:80", true},
		{"[::]:80", "10.0.0.1:80", true},
		{"127.0.0.1:80", "127.0.0.2:80", false},
		{"0.0.0.0:80", "0.0.0.0:81", false},
		{"127.0.0.1:080", "127.0.0.1:80", true},
	}
	for _, tt := range tests {
		ka, err := listenKey(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := listenKey(tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := listenOverlaps(ka, kb); got != tt.want {
			t.Errorf("%s and %s overlap = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
