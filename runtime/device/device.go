// Package device finds the Tenstorrent chips of this host, keeps track of
// which unit holds which chip, and resets chips between restarts.
//
// Chips are the /dev/tenstorrent/N nodes of the kernel driver. The cpu
// device is always available and needs no chip, so a host without
// accelerators simply has no chips.
package device

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// DefaultRoot is where the tt-kmd driver creates its device nodes.
const DefaultRoot = "/dev/tenstorrent"

// Chip is one /dev/tenstorrent/N node.
type Chip struct {
	// ID is N, the number units list in chips = [...].
	ID int `json:"id"`
	// Path is the device node.
	Path string `json:"path"`
}

// Discover lists the chips under root (DefaultRoot when empty): entries
// whose names are decimal numbers, sorted by ID. A missing root means the
// host has no chips and is not an error.
func Discover(root string) ([]Chip, error) {
	if root == "" {
		root = DefaultRoot
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover chips in %s: %w", root, err)
	}
	var chips []Chip
	for _, e := range entries {
		id, ok := chipID(e.Name())
		if !ok {
			continue
		}
		chips = append(chips, Chip{ID: id, Path: filepath.Join(root, e.Name())})
	}
	slices.SortFunc(chips, func(a, b Chip) int { return a.ID - b.ID })
	return chips, nil
}

// chipID parses a plain decimal name ("0", "12"); signs, spaces and leading
// zeros are not chip names.
func chipID(name string) (int, bool) {
	if name == "" || (len(name) > 1 && name[0] == '0') {
		return 0, false
	}
	for _, r := range name {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	id, err := strconv.Atoi(name)
	return id, err == nil
}

// Missing returns the ids that are not among chips, in the given order.
func Missing(chips []Chip, ids []int) []int {
	var out []int
	for _, id := range ids {
		if !slices.ContainsFunc(chips, func(c Chip) bool { return c.ID == id }) {
			out = append(out, id)
		}
	}
	return out
}
