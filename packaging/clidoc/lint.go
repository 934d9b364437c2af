package clidoc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Lint renders a man page with whichever of groff and man(1) are
// installed: groff -ww must print no warning, and man -l must render the
// NAME section. It returns the tools it ran, so a caller can say what was
// not checked.
func Lint(page []byte) (ran []string, err error) {
	dir, err := os.MkdirTemp("", "clidoc-lint")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "page.1")
	if err := os.WriteFile(f, page, 0o644); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("groff"); err == nil {
		ran = append(ran, "groff")
		out, err := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", f).CombinedOutput()
		if err != nil || len(out) > 0 {
			return ran, fmt.Errorf("groff -ww: %v: %s", err, out)
		}
	}
	if _, err := exec.LookPath("man"); err == nil {
		ran = append(ran, "man")
		cmd := exec.Command("man", "-l", f)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("NAME")) {
			return ran, fmt.Errorf("man -l: %v: %s", err, out)
		}
	}
	return ran, nil
}
