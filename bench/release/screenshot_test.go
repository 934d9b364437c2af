package release

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/units/catalog"
)

// TestHTMLRendersInChromium renders the fixture report in headless
// Chromium (skipped where it is not installed; `make report-screenshot`
// does the same for a real run) and checks the page drew: a screenshot
// with the verdict's colour and enough ink to be the tables and charts.
func TestHTMLRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	dir := t.TempDir()
	page, err := HTML(fixtureReport(catalog.StatusFunctional))
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, ReportHTML)
	if err := os.WriteFile(html, page, 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1280,1600", "--screenshot="+shot, "file://"+html)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// The FAIL verdict is drawn in its red (#b3261e), and the page is far
	// from blank.
	red, ink := 0, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 > 150 && g>>8 < 80 && bl>>8 < 80 {
				red++
			}
			if r>>8 < 200 || g>>8 < 200 || bl>>8 < 200 {
				ink++
			}
		}
	}
	if red < 20 || ink < 5000 {
		t.Errorf("screenshot %s looks empty: %d red pixels, %d inked (of %d)", shot, red, ink, bounds.Dx()*bounds.Dy()/4)
	}

}
