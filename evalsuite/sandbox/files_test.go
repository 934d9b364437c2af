package sandbox

import (
	"context"
	"testing"
)

// TestRunWithDataFiles: data files lie beside program.py in the private
// directory; a name that could leave it is refused.
func TestRunWithDataFiles(t *testing.T) {
	r := newRunner(t)
	res, err := r.RunWith(context.Background(), "assert open('case.json').read() == '[1]'\n", map[string][]byte{"case.json": []byte("[1]")})
	if err != nil || res.Status != Passed {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, name := range []string{"../x", "program.py", ".hidden", "a/b"} {
		if _, err := r.RunWith(context.Background(), "pass\n", map[string][]byte{name: nil}); err == nil {
			t.Errorf("data file %q accepted", name)
		}
	}
}
