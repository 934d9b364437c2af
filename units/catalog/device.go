package catalog

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// DeviceType is one Tenstorrent system type (tt-inference-server's
// DeviceTypes), or the host CPU/GPU.
type DeviceType struct {
	// Name is the lower-case device name used in unit files ("n300").
	Name string `json:"name"`
	// Enum is the upstream enum name ("N300").
	Enum string `json:"enum"`
	// Mesh is the MESH_DEVICE value ("N300", "TG", "(8,8)").
	Mesh    string `json:"mesh"`
	Product string `json:"product"`
	// Chips is the number of chips (/dev/tenstorrent entries) a unit on this
	// device claims; 0 for cpu, gpu and remote endpoints.
	Chips int `json:"chips"`
	// Arch is "wormhole_b0", "blackhole", "grayskull" or empty.
	Arch string `json:"arch"`
	// DPSubDevices maps a data_parallel_size to the device each replica is
	// equivalent to (T3K with DP 4 → N300).
	DPSubDevices map[string]string `json:"dp_subdevices,omitempty"`
	// DPNeedsMesh marks devices whose DP split needs a Mesh topology.
	DPNeedsMesh bool `json:"dp_needs_mesh,omitempty"`
	// Board and Boards are tt-smi's board census for this system.
	Board  string `json:"board,omitempty"`
	Boards int    `json:"boards,omitempty"`
	// Hosts > 1 and Multihost mark multi-host systems.
	Hosts     int  `json:"hosts,omitempty"`
	Multihost bool `json:"multihost,omitempty"`
	// Remote marks a remote endpoint (SUPER_CLUSTER).
	Remote bool `json:"remote,omitempty"`
	// AutoPriority orders automatic device selection (1 = tried first).
	AutoPriority int `json:"auto_priority,omitempty"`
}

// Hardware reports whether the device is Tenstorrent hardware attached to
// this host, so that a unit on it claims chips.
func (d DeviceType) Hardware() bool { return d.Chips > 0 && !d.Remote }

// Wormhole and Blackhole report the device architecture.
func (d DeviceType) Wormhole() bool { return d.Arch == "wormhole_b0" }

// Blackhole reports whether the device is a Blackhole system.
func (d DeviceType) Blackhole() bool { return d.Arch == "blackhole" }

// DataParallelSubDevice returns the device each of dp replicas corresponds
// to, or false when the reference defines none.
func (d DeviceType) DataParallelSubDevice(dp int) (string, bool) {
	s, ok := d.DPSubDevices[strconv.Itoa(dp)]
	return s, ok
}

func (d DeviceType) clone() DeviceType {
	d.DPSubDevices = maps.Clone(d.DPSubDevices)
	return d
}

// DeviceTypes returns every known device type in the reference's order.
func DeviceTypes() []DeviceType {
	idx := mustIndex()
	out := make([]DeviceType, len(idx.devices))
	for i, d := range idx.devices {
		out[i] = d.clone()
	}
	return out
}

// Device returns the device type with this name (case-insensitive; the
// upstream enum name such as "GALAXY_T3K" is accepted too).
func Device(name string) (DeviceType, error) {
	idx := mustIndex()
	if d, ok := idx.deviceByName[strings.ToLower(name)]; ok {
		return d.clone(), nil
	}
	names := make([]string, len(idx.devices))
	for i, d := range idx.devices {
		names[i] = d.Name
	}
	msg := fmt.Sprintf("unknown device %q; known: %s", name, strings.Join(names, ", "))
	if s := suggest(strings.ToLower(name), names); len(s) > 0 {
		msg = fmt.Sprintf("unknown device %q (did you mean %s?); known: %s", name, strings.Join(s, " or "), strings.Join(names, ", "))
	}
	return DeviceType{}, fmt.Errorf("%s", msg)
}

// MediaConfig is one tt-media-server ModelConfigs row: how a media runner is
// laid out on a device.
type MediaConfig struct {
	// Runner is the MODEL_RUNNER name ("tt-sdxl-trace").
	Runner string `json:"runner"`
	// Device is the lower-case device name.
	Device string `json:"device"`
	// Mesh is the device mesh shape (rows, columns) of one worker.
	Mesh [2]int `json:"mesh"`
	// Workers is the number of worker processes.
	Workers int `json:"workers"`
	// MaxBatchSize is the per-worker batch size (0 = not given).
	MaxBatchSize int `json:"max_batch_size,omitempty"`
}

// MediaConfigs returns every media runner layout.
func MediaConfigs() []MediaConfig {
	return append([]MediaConfig(nil), mustIndex().media...)
}

// Media returns the layout of runner on device.
func Media(runner, device string) (MediaConfig, error) {
	var devs []string
	for _, m := range mustIndex().media {
		if m.Runner != runner {
			continue
		}
		if m.Device == strings.ToLower(device) {
			return m, nil
		}
		devs = append(devs, m.Device)
	}
	if devs == nil {
		return MediaConfig{}, fmt.Errorf("unknown media runner %q", runner)
	}
	return MediaConfig{}, fmt.Errorf("media runner %s does not support device %s; supported: %s", runner, device, strings.Join(devs, ", "))
}
