package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
)

// ParseMeminfo reads /proc/meminfo into bytes per key ("MemAvailable").
func ParseMeminfo(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	for sc.Scan() {
		line++
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: no \"key:\" in %q", line, sc.Text())
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("line %d: %s has no value", line, key)
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", line, key, err)
		}
		if len(f) > 1 {
			if f[1] != "kB" {
				return nil, fmt.Errorf("line %d: %s: unknown unit %q", line, key, f[1])
			}
			if n > (1<<64-1)/1024 {
				return nil, fmt.Errorf("line %d: %s: value out of range", line, key)
			}
			n *= 1024
		}
		out[strings.TrimSpace(key)] = n
	}
	return out, sc.Err()
}

// Snapshot is the part of `tt-smi -s` the checks read. The layout is
// tt-smi's TTSMILog (tt_smi/log.py: host_info.Driver, device_info[] with
// board_info and firmwares); the firmware keys are constants.py's
// FW_LIST_SNAPSHOT (fw_bundle_version first).
type Snapshot struct {
	Time     string `json:"time"`
	HostInfo struct {
		OS     string `json:"OS"`
		Kernel string `json:"Kernel"`
		Driver string `json:"Driver"`
	} `json:"host_info"`
	DeviceInfo []struct {
		BoardInfo struct {
			BusID     string `json:"bus_id"`
			BoardType string `json:"board_type"`
			BoardID   string `json:"board_id"`
		} `json:"board_info"`
		Firmwares struct {
			FWBundleVersion string `json:"fw_bundle_version"`
			CMFW            string `json:"cm_fw"`
			EthFW           string `json:"eth_fw"`
		} `json:"firmwares"`
	} `json:"device_info"`
}

// ParseSnapshot decodes `tt-smi -s` output. Unknown fields are kept out,
// since tt-smi adds telemetry keys between releases.
func ParseSnapshot(b []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("tt-smi snapshot is not JSON: %w", err)
	}
	if s.HostInfo.Driver == "" && s.DeviceInfo == nil {
		return nil, fmt.Errorf("tt-smi snapshot has neither host_info.Driver nor device_info (is it tt-smi -s output?)")
	}
	return &s, nil
}

// KMDVersion is the driver version tt-smi reports ("TT-KMD 1.29" → "1.29"),
// split as run_system_software_validation.py's extract_kmd_version does.
func (s *Snapshot) KMDVersion() string {
	d := strings.TrimSpace(s.HostInfo.Driver)
	if _, v, ok := strings.Cut(d, " "); ok {
		return strings.TrimSpace(v)
	}
	return d
}

// FirmwareBundles lists each chip's fw_bundle_version, skipping "N/A".
func (s *Snapshot) FirmwareBundles() []string {
	var out []string
	for _, d := range s.DeviceInfo {
		if v := d.Firmwares.FWBundleVersion; v != "" && v != "N/A" {
			out = append(out, v)
		}
	}
	return out
}

// Boards counts boards per type the way tt-inference-server's
// device_utils.py does (lines 128-161): the board type's first word, with
// n300 and p300 listed once per chip (L and R) and so halved.
func (s *Snapshot) Boards() (map[string]int, error) {
	boards := map[string]int{}
	chips := map[string]int{}
	for _, d := range s.DeviceInfo {
		t := strings.Fields(strings.ToLower(d.BoardInfo.BoardType))
		if len(t) == 0 || t[0] == "n/a" {
			continue
		}
		t[0] = boardFamily(t[0])
		if t[0] == "n300" || t[0] == "p300" {
			chips[t[0]]++
			continue
		}
		boards[t[0]]++
	}
	for t, n := range chips {
		if n%2 != 0 {
			return nil, fmt.Errorf("tt-smi lists %d %s chips; each board has two (L and R)", n, t)
		}
		boards[t] = n / 2
	}
	return boards, nil
}

// boardFamily drops the variant letter of Blackhole boards: tt-smi names
// them p100a, p150a/b/c and p300a/b/c (tt_smi/utils.py get_board_type),
// while device_utils.py's table names p100, p150 and p300.
func boardFamily(t string) string {
	if len(t) == 5 && t[0] == 'p' && strings.ContainsRune("abc", rune(t[4])) {
		if _, err := strconv.Atoi(t[1:4]); err == nil {
			return t[:4]
		}
	}
	return t
}

// DetectDevice maps the snapshot's boards to a catalog device: the device
// whose board census (type and count) matches, as device_utils.py's
// BOARD_TYPE_COUNT_TO_DEVICE does (lines 35-49).
func (s *Snapshot) DetectDevice() (catalog.DeviceType, error) {
	boards, err := s.Boards()
	if err != nil {
		return catalog.DeviceType{}, err
	}
	if len(boards) != 1 {
		return catalog.DeviceType{}, fmt.Errorf("tt-smi reports boards %s: only one board type per host can be detected; set device explicitly", describeBoards(boards))
	}
	var board string
	var count int
	for b, n := range boards {
		board, count = b, n
	}
	var match []catalog.DeviceType
	for _, d := range catalog.DeviceTypes() {
		if d.Board == board && d.Boards == count && !d.Multihost && !d.Remote {
			match = append(match, d)
		}
	}
	if len(match) == 0 {
		return catalog.DeviceType{}, fmt.Errorf("no catalog device has %s; set device explicitly", describeBoards(boards))
	}
	sort.Slice(match, func(i, j int) bool { return match[i].AutoPriority < match[j].AutoPriority })
	return match[0], nil
}

func describeBoards(b map[string]int) string {
	var parts []string
	for t, n := range b {
		parts = append(parts, fmt.Sprintf("%d x %s", n, t))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "no boards"
	}
	return strings.Join(parts, ", ")
}
