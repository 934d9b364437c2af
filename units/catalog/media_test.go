package catalog

import "testing"

// Every media spec names a runner, and a layout whose workers fit the
// device's chips.
func TestMediaSpecsHaveRunnerAndLayout(t *testing.T) {
	n := 0
	for _, s := range Specs() {
		if !s.IsMedia() {
			continue
		}
		n++
		m, err := MediaLayout(&s)
		if err != nil {
			t.Errorf("%s on %s: %v", s.ModelName, s.Device, err)
			continue
		}
		dev, err := Device(s.Device)
		if err != nil {
			t.Fatal(err)
		}
		if m.Workers < 1 || m.Mesh[0] < 1 || m.Mesh[1] < 1 {
			t.Errorf("%s on %s: layout %+v", s.ModelName, s.Device, m)
		}
		if dev.Chips > 0 && m.Workers*m.Mesh[0]*m.Mesh[1] > dev.Chips {
			t.Errorf("%s on %s: %d workers of mesh %v need more than the device's %d chips", s.ModelName, s.Device, m.Workers, m.Mesh, dev.Chips)
		}
		if s.MediaService() == "embedding" {
			if _, _, ok := EmbeddingDimensions(s.ModelName); !ok {
				t.Errorf("%s: no embedding dimensions", s.ModelName)
			}
		}
	}
	if n < 80 {
		t.Errorf("%d media specs, want the catalog's ~90", n)
	}
	sdxl, err := Lookup("stable-diffusion-xl-base-1.0", "t3k")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := MediaRunner(sdxl); r != "tt-sdxl-trace" {
		t.Errorf("SDXL runner %q", r)
	}
	if m, _ := MediaLayout(sdxl); m.Workers != 4 || m.Mesh != [2]int{2, 1} {
		t.Errorf("SDXL t3k layout %+v, want 4 workers of 2x1", m)
	}
}
