package testbin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A second ask in the same run gets the same binary without a rebuild.
func TestPathBuildsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ttisctl")
	}
	p := Path(t, "ttisctl", false)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if again := Path(t, "ttisctl", false); again != p {
		t.Fatalf("second path %s, first %s", again, p)
	}
	if st2, err := os.Stat(p); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the binary was rebuilt (%v)", err)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ttisctl") {
		t.Errorf("built binary: %v %s", err, out)
	}
}
