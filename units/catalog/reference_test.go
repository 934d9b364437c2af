package catalog

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// referenceDoc returns the lines of the shared tt-inference-server reference
// (../shared/reference beside the module), or skips the test in a clone
// that does not have it.
func referenceDoc(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(testbin.Shared(t, "reference/tt-inference-server.md"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// section returns the table rows between a heading and the next heading.
func section(lines []string, heading string) []string {
	var out []string
	in := false
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			if in {
				break
			}
			in = strings.HasPrefix(l, heading)
			continue
		}
		if in && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "|---") {
			out = append(out, l)
		}
	}
	return out
}

func cells(row string) []string {
	parts := strings.Split(strings.Trim(row, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// TestAgainstReferenceCatalog re-reads every §2.3 row from the reference and
// checks each (weight, device) spec's limits, status, flags and pins.
func TestAgainstReferenceCatalog(t *testing.T) {
	rows := section(referenceDoc(t), "### 2.3 Prod catalog")
	devRE := regexp.MustCompile(`^(\w+):(\d+)/(\d+)(k?)(?:\[(.*)\])?$`)
	specs := Specs()
	checked := 0
	for _, row := range rows[1:] { // rows[0] is the header
		c := cells(row)
		weights, impl, status, devices, pins := strings.Split(c[0], ", "), c[3], c[4], strings.Fields(c[5]), strings.Fields(c[7])
		pin := strings.Split(pins[0], "/")
		for _, w := range weights {
			for _, d := range devices {
				m := devRE.FindStringSubmatch(d)
				if m == nil {
					t.Fatalf("cannot read device %q in %s", d, row)
				}
				dev := strings.ToLower(m[1])
				conc, _ := strconv.Atoi(m[2])
				ctx, _ := strconv.Atoi(m[3])
				if m[4] == "k" {
					ctx *= 1024
				}
				var found *Spec
				for i := range specs {
					s := &specs[i]
					if s.HFRepo == w && s.Device == dev && s.Impl == impl && s.Version == pin[0] && s.TTMetalCommit == pin[1] {
						found = s
					}
				}
				if found == nil {
					t.Errorf("no spec for %s on %s (%s %s)", w, dev, impl, pins[0])
					continue
				}
				checked++
				dp, def := 0, true
				for _, f := range strings.Split(m[5], ",") {
					switch {
					case strings.HasPrefix(f, "dp"):
						dp, _ = strconv.Atoi(f[2:])
					case f == "nondef":
						def = false
					}
				}
				vllm := pin[2]
				if vllm == "None" {
					vllm = ""
				}
				if found.MaxConcurrency != conc || found.MaxContext != ctx || found.Status != status || found.DataParallel != dp || found.DefaultImpl != def || found.VllmCommit != vllm {
					t.Errorf("%s: got conc %d ctx %d %s dp %d default %v vllm %q; reference row %s", found.ModelID, found.MaxConcurrency, found.MaxContext, found.Status, found.DataParallel, found.DefaultImpl, found.VllmCommit, d)
				}
				if len(pins) > 1 && strings.HasPrefix(pins[1], "img=") && found.DockerImage != "ghcr.io/tenstorrent/"+strings.TrimPrefix(pins[1], "img=") {
					t.Errorf("%s: image %s, reference %s", found.ModelID, found.DockerImage, pins[1])
				}
			}
		}
	}
	if checked != 225 {
		t.Errorf("checked %d specs against the reference, want 225", checked)
	}
}

// TestAgainstReferenceTargets re-reads every §3.6 target and checks the
// embedded value.
func TestAgainstReferenceTargets(t *testing.T) {
	rows := section(referenceDoc(t), "### 3.6")
	raw, err := readData()
	if err != nil {
		t.Fatal(err)
	}
	entryRE := regexp.MustCompile(`^(\w+)\[([^\]]*)\]=(\S+)`)
	checked := 0
	for _, row := range rows[1:] {
		c := cells(row)
		model := c[0]
		seen := map[string]int{}
		for _, entry := range strings.Split(c[2], "; ") {
			m := entryRE.FindStringSubmatch(entry)
			if m == nil {
				t.Fatalf("cannot read target %q", entry)
			}
			dev := m[1]
			i := seen[dev]
			seen[dev]++
			list := raw.targets[model][dev]
			if i >= len(list) {
				t.Errorf("%s %s: target %d missing", model, dev, i)
				continue
			}
			got := list[i]
			vals := strings.Split(m[3], "/")
			for j, want := range []float64{got.TTFTms, got.TputUser, got.Tput} {
				if j >= len(vals) {
					break
				}
				ref := 0.0
				if vals[j] != "-" {
					ref, _ = strconv.ParseFloat(vals[j], 64)
				}
				if ref != want {
					t.Errorf("%s %s[%s] value %d: embedded %v, reference %v", model, dev, m[2], j, want, ref)
				}
			}
			if cc := regexp.MustCompile(`\bc(\d+)\b`).FindStringSubmatch(m[2]); cc != nil {
				if n, _ := strconv.Atoi(cc[1]); n != got.Concurrency {
					t.Errorf("%s %s: concurrency %d, reference %s", model, dev, got.Concurrency, m[2])
				}
			}
			checked++
		}
	}
	if checked != 380 {
		t.Errorf("checked %d targets, want 380", checked)
	}
}
