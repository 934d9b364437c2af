package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/units/internal/similar"
)

// index is the expanded catalog. It is built once, on first use, and never
// modified afterwards; every accessor hands out copies.
type index struct {
	devices      []DeviceType
	deviceByName map[string]DeviceType
	specs        []Spec
	// byModel maps a lower-case model name or HF repo to spec indexes.
	byModel map[string][]int
	// models lists model names in catalog order, once each.
	models []string
	media  []MediaConfig
}

// loadIndex expands the embedded data. It is wrapped in sync.OnceValues so
// the package has no init-time work and no mutable state.
var loadIndex = sync.OnceValues(func() (*index, error) {
	raw, err := readData()
	if err != nil {
		return nil, err
	}
	return buildIndex(raw)
})

// loadDevIndex expands the development catalog the same way.
var loadDevIndex = sync.OnceValues(func() (*index, error) {
	raw, err := readDevData()
	if err != nil {
		return nil, err
	}
	idx, err := buildIndex(raw)
	if err != nil {
		return nil, err
	}
	// Every dev spec says where it came from, so that what grades with it
	// (bench/release) can say so and never mistake it for a prod entry.
	for i := range idx.specs {
		idx.specs[i].Catalog = ModeDev
	}
	return idx, nil
})

// Catalog modes: the production specs (default) or the development ones
// (tt-inference-server's --dev-mode).
const (
	ModeProd = "prod"
	ModeDev  = "dev"
)

// ParseMode checks a catalog mode name ("" is prod).
func ParseMode(mode string) (string, error) {
	switch mode {
	case "", ModeProd:
		return ModeProd, nil
	case ModeDev:
		return ModeDev, nil
	}
	return "", fmt.Errorf("unknown catalog %q (want %q or %q)", mode, ModeProd, ModeDev)
}

// indexOf returns the index of a catalog mode ("" is prod).
func indexOf(mode string) (*index, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return nil, err
	}
	if m == ModeDev {
		idx, err := loadDevIndex()
		if err != nil {
			panic(fmt.Sprintf("catalog: embedded dev data is corrupt: %v", err))
		}
		return idx, nil
	}
	return mustIndex(), nil
}

// mustIndex returns the index. The embedded data is part of the binary and
// checked by this package's tests, so failing to decode it is a build defect,
// not bad input.
func mustIndex() *index {
	idx, err := loadIndex()
	if err != nil {
		panic(fmt.Sprintf("catalog: embedded data is corrupt: %v", err))
	}
	return idx
}

func buildIndex(raw *rawData) (*index, error) {
	idx := &index{
		devices:      raw.devices,
		deviceByName: map[string]DeviceType{},
		byModel:      map[string][]int{},
		media:        raw.media,
	}
	for _, d := range raw.devices {
		idx.deviceByName[d.Name] = d
		idx.deviceByName[strings.ToLower(d.Enum)] = d
	}
	impls := map[string]implInfo{}
	for _, im := range raw.impls {
		impls[im.ID] = im
	}
	seenModel := map[string]bool{}
	for ti, t := range raw.templates {
		impl, ok := impls[t.Impl]
		if !ok {
			return nil, fmt.Errorf("template %d (%s): unknown impl %q", ti, t.Weights[0], t.Impl)
		}
		for _, w := range t.Weights {
			for _, ds := range t.Devices {
				dev, ok := idx.deviceByName[ds.Device]
				if !ok {
					return nil, fmt.Errorf("template %d (%s): unknown device %q", ti, w, ds.Device)
				}
				s, err := expand(t, impl, w, ds, dev, idx.deviceByName, raw.targets)
				if err != nil {
					return nil, fmt.Errorf("template %d (%s, %s): %w", ti, w, ds.Device, err)
				}
				n := len(idx.specs)
				idx.specs = append(idx.specs, s)
				for _, key := range []string{strings.ToLower(s.ModelName), strings.ToLower(s.HFRepo)} {
					if !slices.Contains(idx.byModel[key], n) {
						idx.byModel[key] = append(idx.byModel[key], n)
					}
				}
				if !seenModel[s.ModelName] {
					seenModel[s.ModelName] = true
					idx.models = append(idx.models, s.ModelName)
				}
			}
		}
	}
	return idx, nil
}

// Specs returns every (weights, device) spec in catalog order.
func Specs() []Spec {
	out, _ := SpecsIn(ModeProd)
	return out
}

// SpecsIn returns every spec of the catalog of mode.
func SpecsIn(mode string) ([]Spec, error) {
	idx, err := indexOf(mode)
	if err != nil {
		return nil, err
	}
	out := make([]Spec, len(idx.specs))
	for i := range idx.specs {
		out[i] = idx.specs[i].clone()
	}
	return out, nil
}

// Models returns every model name (HF repo basename) in catalog order.
func Models() []string {
	return slices.Clone(mustIndex().models)
}

// ModelSpecs returns every spec of a model (matched by model name or HF repo,
// case-insensitively), default implementations first, or an error naming
// close matches when the model is unknown.
func ModelSpecs(model string) ([]Spec, error) { return ModelSpecsIn(ModeProd, model) }

// ModelSpecsIn is ModelSpecs in the catalog of mode.
func ModelSpecsIn(mode, model string) ([]Spec, error) {
	idx, err := indexOf(mode)
	if err != nil {
		return nil, err
	}
	ids, ok := idx.byModel[strings.ToLower(strings.TrimSpace(model))]
	if !ok {
		return nil, unknownModel(idx, model)
	}
	out := make([]Spec, 0, len(ids))
	for _, i := range ids {
		out = append(out, idx.specs[i].clone())
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].DefaultImpl && !out[b].DefaultImpl })
	return out, nil
}

// Lookup returns the spec serving model on device. model is a model name
// ("Llama-3.1-8B-Instruct") or HF repo ("meta-llama/Llama-3.1-8B-Instruct"),
// matched case-insensitively; device is a device name such as "n300". When
// several implementations serve the pair, the default one wins. Errors name
// close matches for an unknown model and list the supported devices when the
// model does not run on device.
func Lookup(model, device string) (*Spec, error) { return LookupIn(ModeProd, model, device) }

// LookupIn is Lookup in the catalog of mode (ModeProd or ModeDev).
func LookupIn(mode, model, device string) (*Spec, error) {
	idx, err := indexOf(mode)
	if err != nil {
		return nil, err
	}
	ids, ok := idx.byModel[strings.ToLower(strings.TrimSpace(model))]
	if !ok {
		return nil, unknownModel(idx, model)
	}
	dev := strings.ToLower(strings.TrimSpace(device))
	d, ok := idx.deviceByName[dev]
	if !ok {
		_, err := Device(device)
		return nil, err
	}
	dev = d.Name
	var best *Spec
	var supported []string
	for _, i := range ids {
		s := &idx.specs[i]
		if !slices.Contains(supported, s.Device) {
			supported = append(supported, s.Device)
		}
		if s.Device != dev {
			continue
		}
		if best == nil || (s.DefaultImpl && !best.DefaultImpl) {
			best = s
		}
	}
	if best == nil {
		name := idx.specs[ids[0]].ModelName
		return nil, fmt.Errorf("model %s does not support device %s; supported: %s", name, device, strings.Join(supported, ", "))
	}
	c := best.clone()
	return &c, nil
}

func unknownModel(idx *index, model string) error {
	if s := suggest(strings.ToLower(model), idx.models); len(s) > 0 {
		return fmt.Errorf("unknown model %q (did you mean %s?)", model, strings.Join(s, " or "))
	}
	return fmt.Errorf("unknown model %q (see `ttisctl catalog` for the list)", model)
}

// suggest returns up to three candidates close to q: those containing it
// (or contained in it) first, then those within an edit distance of a third
// of q's length.
func suggest(q string, candidates []string) []string {
	if q == "" {
		return nil
	}
	type scored struct {
		name string
		d    int
	}
	if i := strings.LastIndex(q, "/"); i >= 0 {
		q = q[i+1:]
	}
	var hits []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := similar.Distance(q, lc)
		if d <= max(2, len(q)/3) || strings.Contains(lc, q) || strings.Contains(q, lc) {
			hits = append(hits, scored{c, d})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].d < hits[j].d })
	var out []string
	for _, h := range hits {
		if len(out) == 3 {
			break
		}
		out = append(out, h.name)
	}
	return out
}
