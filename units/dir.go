package units

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/units/hardened"
)

// File is one unit file as read from a units folder: its bytes and hash (so
// a daemon can tell a changed file from a touched one) and either the unit
// or the problems found in it.
type File struct {
	// Name is the unit name (file name without .toml).
	Name string
	// Path is the file's path in the folder (symlinks not resolved).
	Path string
	// Data is the file's content and Hash its SHA-256 in hex.
	Data []byte
	Hash string
	// Unit is the valid unit; nil when Err is set.
	Unit *Unit
	// Err lists the file's problems, cross-unit conflicts included.
	Err ErrorList
}

// Set is the content of a units folder, in name order.
type Set struct {
	Files []*File
}

// Units returns the valid units, in name order.
func (s *Set) Units() []*Unit {
	var out []*Unit
	for _, f := range s.Files {
		if f.Unit != nil {
			out = append(out, f.Unit)
		}
	}
	return out
}

// Errors returns every problem of every file, in name order.
func (s *Set) Errors() ErrorList {
	var out ErrorList
	for _, f := range s.Files {
		out = append(out, f.Err...)
	}
	return out
}

// File returns the file of the named unit, or nil.
func (s *Set) File(name string) *File {
	for _, f := range s.Files {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// MaxFolderEntries bounds the entries of a units folder a daemon reads.
const MaxFolderEntries = 100_000

// LoadDir reads every *.toml unit file in dir, following symlinks (a
// Kubernetes ConfigMap mount swaps a "..data" symlink) and skipping hidden
// files and names starting with "..". It returns every file with its unit
// or its problems, then checks the valid units against each other (see
// CheckConflicts) with no units already held. The error is only for a folder
// that cannot be listed.
func LoadDir(dir string) (*Set, error) {
	return LoadDirHeld(dir, nil)
}

// LoadDirHeld is LoadDir for a daemon that already runs units: held units
// keep their chips and listen addresses (see CheckConflicts), so that a new
// or edited file can never take them from a running unit.
func LoadDirHeld(dir string, held []*Unit) (*Set, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	entries, err := hardened.ReadDir(ctx, dir, MaxFolderEntries)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("read units folder %s: %w", dir, hardened.WithoutPath(err))
	}
	set := &Set{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, Ext) {
			continue
		}
		path := filepath.Join(dir, name)
		// os.Stat follows symlinks: a dangling link or a folder named
		// x.toml is reported, not skipped silently.
		f := &File{Name: strings.TrimSuffix(name, Ext), Path: path}
		set.Files = append(set.Files, f)
		data, err := ReadFile(path)
		if err != nil {
			f.Err = Errors(err)
			continue
		}
		f.Data = data
		sum := sha256.Sum256(data)
		f.Hash = hex.EncodeToString(sum[:])
		u, err := Parse(f.Name, path, data)
		if err != nil {
			f.Err = Errors(err)
			continue
		}
		f.Unit = u
	}
	slices.SortFunc(set.Files, func(a, b *File) int { return strings.Compare(a.Name, b.Name) })
	conflicts := CheckConflicts(set.Units(), held)
	for _, f := range set.Files {
		if errs := conflicts[f.Name]; len(errs) > 0 {
			f.Err = append(f.Err, errs...)
			f.Unit = nil
		}
	}
	return set, nil
}

// CheckConflicts finds units that claim the same chip or listen on the same
// address, and reports each conflict on the later unit ("chip 0 already
// claimed by unit a"). held units (those a daemon already runs) come first,
// in name order, so that a new unit can never take a chip or an address from
// a running one; a unit in units with the name of a held unit stands in for
// it in that first group (an edit of a running unit keeps its priority). The
// other units follow in name order. Disabled units claim nothing; units with
// a conflict claim nothing either, so one bad unit does not shadow others.
// Only units in units get errors: the result maps their names to problems.
func CheckConflicts(units, held []*Unit) map[string]ErrorList {
	type entry struct {
		u         *Unit
		candidate bool
	}
	byName := map[string]*Unit{}
	for _, u := range units {
		byName[u.Name] = u
	}
	isHeld := map[string]bool{}
	var order []entry
	for _, h := range held {
		if isHeld[h.Name] {
			continue
		}
		isHeld[h.Name] = true
		if u, ok := byName[h.Name]; ok {
			order = append(order, entry{u, true})
		} else {
			order = append(order, entry{h, false})
		}
	}
	byEntryName := func(a, b entry) int { return strings.Compare(a.u.Name, b.u.Name) }
	slices.SortFunc(order, byEntryName)
	var rest []entry
	for _, u := range units {
		if !isHeld[u.Name] {
			rest = append(rest, entry{u, true})
		}
	}
	slices.SortFunc(rest, byEntryName)
	order = append(order, rest...)

	chips := map[int]string{}
	addrs := map[string]string{}
	out := map[string]ErrorList{}
	for _, e := range order {
		u := e.u
		if u.Disabled {
			continue
		}
		c := &errorsOf{file: u.Path, pos: u.pos}
		for j, chip := range u.Chips {
			if owner, taken := chips[chip]; taken {
				c.add("chips."+strconv.Itoa(j), "chip %d already claimed by unit %s", chip, owner)
			}
		}
		key, err := listenKey(u.Listen)
		if err == nil {
			for other, owner := range addrs {
				if listenOverlaps(key, other) {
					c.add("listen", "address %s already used by unit %s", u.Listen, owner)
					break
				}
			}
		}
		if len(c.list) > 0 && e.candidate {
			sortErrors(c.list)
			out[u.Name] = c.list
			continue
		}
		for _, chip := range u.Chips {
			if _, taken := chips[chip]; !taken {
				chips[chip] = u.Name
			}
		}
		if err == nil {
			if _, taken := addrs[key]; !taken {
				addrs[key] = u.Name
			}
		}
	}
	return out
}
