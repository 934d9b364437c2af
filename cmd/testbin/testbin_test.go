package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
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

// Shared finds what ../shared holds beside the module root, and an
// absent file is an error that names it.
func TestSharedPath(t *testing.T) {
	if _, err := SharedPath("no/such/file"); err == nil || !strings.Contains(err.Error(), "no/such/file") {
		t.Errorf("absent file: %v", err)
	}
	root := ModuleRoot(t)
	p, err := SharedPath("models")
	if err != nil {
		t.Skipf("this checkout has no ../shared/models: %v", err)
	}
	if want := filepath.Join(root, "..", "shared", "models"); p != want {
		t.Errorf("SharedPath(models) = %s, want %s", p, want)
	}
}
