package units

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
)

// Media configures a media model's server (tt-media-server's settings).
// Every field is optional; the catalog's layout for the model and device
// fills the rest.
type Media struct {
	// DeviceIDs are the chip groups of the worker processes, written as
	// tt-media-server's DEVICE_IDS: "(0,1),(2,3)" is two workers of two
	// chips each. Ids are positions in the unit's chips list (0 is the
	// first chip the unit claims). Default: the catalog's worker count
	// and mesh, in order.
	DeviceIDs string `toml:"device_ids" json:"device_ids,omitempty"`
	// MaxAudioDurationSeconds bounds an uploaded clip's length
	// (MAX_AUDIO_DURATION_SECONDS, default 60).
	MaxAudioDurationSeconds float64 `toml:"max_audio_duration_seconds" json:"max_audio_duration_seconds,omitempty"`
	// MaxAudioSizeBytes bounds an uploaded clip's size
	// (MAX_AUDIO_SIZE_BYTES, default 50 MiB).
	MaxAudioSizeBytes int64 `toml:"max_audio_size_bytes" json:"max_audio_size_bytes,omitempty"`
}

// Media defaults, after tt-media-server's settings.
const (
	DefaultMaxAudioDurationSeconds = 60
	DefaultMaxAudioSizeBytes       = 50 << 20
)

// ParseDeviceIDs reads tt-media-server's DEVICE_IDS syntax: groups of
// comma-separated chip ids in parentheses, separated by commas
// ("(0),(1)", "(0,1),(2,3)").
func ParseDeviceIDs(s string) ([][]int, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if t == "" {
		return nil, fmt.Errorf("empty; write groups such as \"(0),(1)\" or \"(0,1),(2,3)\"")
	}
	if !strings.HasPrefix(t, "(") || !strings.HasSuffix(t, ")") {
		return nil, fmt.Errorf("%q: each group must be in parentheses, as in \"(0,1),(2,3)\"", s)
	}
	var groups [][]int
	for i, g := range strings.Split(t[1:len(t)-1], "),(") {
		if g == "" {
			return nil, fmt.Errorf("%q: group %d is empty", s, i+1)
		}
		var ids []int
		for _, f := range strings.Split(g, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%q: group %d: %q is not a chip id (a number ≥ 0)", s, i+1, f)
			}
			ids = append(ids, n)
		}
		groups = append(groups, ids)
	}
	return groups, nil
}

// FormatDeviceIDs writes groups in DEVICE_IDS syntax.
func FormatDeviceIDs(groups [][]int) string {
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j, id := range g {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(id))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// MediaWorkers returns the chip groups of a media unit's workers: its
// media.device_ids, or the catalog layout's workers, each taking the next
// mesh-sized run of chip positions.
func (u *Unit) MediaWorkers() ([][]int, error) {
	if u.Media.DeviceIDs != "" {
		return ParseDeviceIDs(u.Media.DeviceIDs)
	}
	if u.Spec == nil {
		return nil, fmt.Errorf("unit %s: no catalog entry for %s on %s", u.Name, u.Model, u.Device)
	}
	m, err := catalog.MediaLayout(u.Spec)
	if err != nil {
		return nil, err
	}
	per := m.Mesh[0] * m.Mesh[1]
	groups := make([][]int, m.Workers)
	for w := range groups {
		for i := range per {
			groups[w] = append(groups[w], w*per+i)
		}
	}
	return groups, nil
}

// validateMedia checks the [media] table: only for media models, worker
// groups that fit the unit's chips and match the model's mesh, limits that
// make sense.
func validateMedia(c *errorsOf, u *Unit, dev catalog.DeviceType, devOK bool) {
	if !c.pos.has("media") {
		return
	}
	if u.Spec != nil && !u.Spec.IsMedia() {
		c.add("media", "[media] settings are for media models (images, speech, CNNs, embeddings, video); %s is a %s model", u.Spec.ModelName, u.Spec.ModelType)
		return
	}
	if d := u.Media.MaxAudioDurationSeconds; d < 0 || d != d || d > 24*3600 {
		c.add("media.max_audio_duration_seconds", "must be between 0 (default %d) and 86400, got %v", DefaultMaxAudioDurationSeconds, d)
	}
	if b := u.Media.MaxAudioSizeBytes; b < 0 || b > 1<<30 {
		c.add("media.max_audio_size_bytes", "must be between 0 (default %d) and 1 GiB, got %d", DefaultMaxAudioSizeBytes, b)
	}
	if u.Media.DeviceIDs == "" {
		return
	}
	groups, err := ParseDeviceIDs(u.Media.DeviceIDs)
	if err != nil {
		c.add("media.device_ids", "%v", err)
		return
	}
	chips := 0
	if devOK {
		chips = dev.Chips
	}
	seen := map[int]int{}
	for gi, g := range groups {
		for _, id := range g {
			if prev, dup := seen[id]; dup {
				c.add("media.device_ids", "chip %d is in worker groups %d and %d; each chip serves one worker", id, prev+1, gi+1)
				return
			}
			seen[id] = gi
			if devOK && dev.Hardware() && id >= chips {
				c.add("media.device_ids", "chip %d is outside the unit's %d chips (ids are positions 0-%d in chips)", id, chips, chips-1)
				return
			}
		}
		if len(g) != len(groups[0]) {
			c.add("media.device_ids", "worker groups differ in size (%d and %d chips); every worker runs the same mesh", len(groups[0]), len(g))
			return
		}
	}
	if u.Spec != nil {
		if m, err := catalog.MediaLayout(u.Spec); err == nil {
			if per := m.Mesh[0] * m.Mesh[1]; len(groups[0]) != per {
				c.add("media.device_ids", "each worker of %s on %s runs a %dx%d mesh (%d chips), but the groups have %d; e.g. device_ids = %q", m.Runner, u.Device, m.Mesh[0], m.Mesh[1], per, len(groups[0]), exampleGroups(per, max(1, chips/per)))
			}
		}
	}
}

func exampleGroups(per, n int) string {
	groups := make([][]int, n)
	for w := range groups {
		for i := range per {
			groups[w] = append(groups[w], w*per+i)
		}
	}
	return FormatDeviceIDs(groups)
}

// defaultBodyBytes is limits.max_body_bytes when the unit does not set
// it: room for a base64-encoded clip of media.max_audio_size_bytes on a
// speech-to-text unit (and a 32 MiB image on a CNN unit), 8 MiB otherwise.
func defaultBodyBytes(u *Unit) int {
	if u.Spec == nil {
		return DefaultMaxBodyBytes
	}
	switch u.Spec.MediaService() {
	case "audio":
		audio := u.Media.MaxAudioSizeBytes
		if audio <= 0 {
			audio = DefaultMaxAudioSizeBytes
		}
		return int(audio/3*4) + 1<<20
	case "cnn":
		return 48 << 20
	}
	return DefaultMaxBodyBytes
}
