// Package deb holds the .deb's nfpm configuration and maintainer scripts;
// its test builds the package with `make deb` and installs it.
package deb

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ttis-dev/ttis/packaging/clidoc"
)

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestDebInstallsIntoCleanRoot builds the .deb and installs it with
// dpkg -i into an empty root (dpkg --root, maintainer scripts run
// chrootless with DPKG_ROOT, as Debian's own bootstrap tools do; a full
// chroot needs a Debian mirror: make deb-root-check). It checks the user,
// the folders, that nothing is enabled, the installed unit with
// systemd-analyze, the man pages with man -l, an upgrade over itself and
// removal, and lints the package when lintian is installed.
func TestDebInstallsIntoCleanRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and a package")
	}
	need(t, "make", "dpkg", "dpkg-deb", "gzip")
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root needs root to set file owners")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run(t, repo, nil, "make", "-s", "deb", "BIN="+tmp+"/bin", "BUILD="+tmp+"/build", "DIST="+tmp+"/dist", "VERSION=v1.2.3")
	deb := filepath.Join(tmp, "dist", "ttis_1.2.3_"+strings.TrimSpace(run(t, repo, nil, "go", "env", "GOARCH"))+".deb")

	if _, err := exec.LookPath("lintian"); err == nil {
		out, _ := exec.Command("lintian", "--no-cfg", "--allow-root", deb).CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "E: ") || strings.HasPrefix(l, "W: ") {
				t.Errorf("lintian: %s", l)
			}
		}
	} else {
		t.Log("lintian not installed: package not linted")
	}

	root := filepath.Join(tmp, "root")
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		"var/lib/dpkg/status": "",
		"etc/passwd":          "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":           "root:x:0:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// libc6 is not in the empty root; the binaries are not run from it.
	dpkg := func(args ...string) string {
		return run(t, tmp, nil, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--force-depends", "--log=/dev/null"}, args...)...)
	}
	dpkg("-i", deb)

	uid, gid := entry(t, root, "etc/passwd", "ttis", 2), entry(t, root, "etc/group", "ttis", 2)
	if uid == 0 || gid == 0 {
		t.Fatalf("ttis user %d group %d: want a system user and group", uid, gid)
	}
	for path, want := range map[string]struct {
		mode     os.FileMode
		uid, gid int
	}{
		"var/lib/ttis":                                         {0o750 | os.ModeDir, uid, gid},
		"var/lib/ttis/runs":                                    {0o750 | os.ModeDir, uid, gid},
		"etc/ttis/units":                                       {0o755 | os.ModeDir, 0, 0},
		"etc/ttis/secrets":                                     {0o750 | os.ModeDir, 0, gid},
		"usr/bin/ttisd":                                        {0o755, 0, 0},
		"usr/bin/ttisctl":                                      {0o755, 0, 0},
		"etc/ttis/ttisd.toml":                                  {0o644, 0, 0},
		"usr/lib/systemd/system/ttisd.service":                 {0o644, 0, 0},
		"usr/lib/sysusers.d/ttis.conf":                         {0o644, 0, 0},
		"usr/lib/tmpfiles.d/ttis.conf":                         {0o644, 0, 0},
		"usr/share/bash-completion/completions/ttisctl":        {0o644, 0, 0},
		"usr/share/zsh/vendor-completions/_ttisctl":            {0o644, 0, 0},
		"usr/share/fish/vendor_completions.d/ttisctl.fish":     {0o644, 0, 0},
		"usr/share/doc/ttis/examples/systemd/docker.conf":      {0o644, 0, 0},
		"usr/share/doc/ttis/examples/units/llama-8b-n300.toml": {0o644, 0, 0},
	} {
		st, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Errorf("installed: %v", err)
			continue
		}
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode() != want.mode || int(sys.Uid) != want.uid || int(sys.Gid) != want.gid {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", path, st.Mode(), sys.Uid, sys.Gid, want.mode, want.uid, want.gid)
		}
	}
	if wants, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/*.wants/ttisd.service")); len(wants) > 0 {
		t.Errorf("the package enabled ttisd by itself: %v", wants)
	}
	for _, page := range []string{"man1/ttisctl.1.gz", "man8/ttisd.8.gz", "man5/ttis.unit.5.gz"} {
		ran, err := clidoc.Lint(gunzip(t, filepath.Join(root, "usr/share/man", page)))
		if err != nil {
			t.Errorf("%s: %v", page, err)
		}
		if len(ran) == 0 {
			t.Logf("%s: neither groff nor man installed, rendering not checked", page)
		}
	}
	if v := run(t, tmp, nil, filepath.Join(root, "usr/bin/ttisctl"), "--version"); !strings.Contains(v, "v1.2.3") {
		t.Errorf("installed ttisctl --version: %q", v)
	}
	checkUnit(t, root)

	dpkg("-i", deb) // an upgrade over itself: the user is not made twice
	if n := strings.Count(readFile(t, filepath.Join(root, "etc/passwd")), "\nttis:"); n != 1 {
		t.Errorf("%d ttis users after reinstalling", n)
	}
	dpkg("-r", "ttis")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/ttisd")); !os.IsNotExist(err) {
		t.Errorf("ttisd after removal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/ttis/ttisd.toml")); err != nil {
		t.Errorf("the configuration must survive removal: %v", err)
	}
}

// checkUnit runs systemd-analyze on the installed unit: verify (with the
// unit's ExecStart pointed into the root, where the binary is, and the
// root's man pages on MANPATH for its Documentation=), and the offline
// security review, whose exposure must stay at most 3.0.
func checkUnit(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not installed: unit not verified")
		return
	}
	unit := readFile(t, filepath.Join(root, "usr/lib/systemd/system/ttisd.service"))
	rooted := strings.Replace(unit, "ExecStart=/usr/bin/ttisd", "ExecStart="+filepath.Join(root, "usr/bin/ttisd"), 1)
	if rooted == unit {
		t.Fatal("installed unit has no ExecStart=/usr/bin/ttisd")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "ttisd.service")
	if err := os.WriteFile(f, []byte(rooted), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, dir, []string{"MANPATH=" + filepath.Join(root, "usr/share/man"), "SYSTEMD_LOG_LEVEL=notice"}, "systemd-analyze", "verify", "--man=yes", f)
	if strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %s", out)
	}
	sec := run(t, dir, nil, "systemd-analyze", "security", "--offline=true", f)
	m := regexp.MustCompile(`Overall exposure level for ttisd.service: ([0-9.]+)`).FindStringSubmatch(sec)
	if m == nil {
		t.Fatalf("systemd-analyze security: no overall level:\n%s", sec)
	}
	if level, _ := strconv.ParseFloat(m[1], 64); level > 3.0 {
		t.Errorf("exposure %s > 3.0:\n%s", m[1], sec)
	}
	t.Logf("systemd-analyze security --offline: exposure %s", m[1])
}

// entry returns field i of name's line in a passwd or group file, as an
// integer.
func entry(t *testing.T, root, file, name string, i int) int {
	t.Helper()
	for _, l := range strings.Split(readFile(t, filepath.Join(root, file)), "\n") {
		if f := strings.Split(l, ":"); f[0] == name && len(f) > i {
			n, err := strconv.Atoi(f[i])
			if err != nil {
				t.Fatalf("%s: %q", file, l)
			}
			return n
		}
	}
	t.Fatalf("%s has no %s", file, name)
	return 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader([]byte(readFile(t, path))))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
