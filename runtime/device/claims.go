package device

import (
	"fmt"
	"slices"
	"sync"
)

// Claims records which unit holds which chip. A chip has at most one
// holder. It is safe for concurrent use.
type Claims struct {
	mu     sync.Mutex
	holder map[int]string
}

// NewClaims returns an empty registry.
func NewClaims() *Claims { return &Claims{holder: map[int]string{}} }

// ConflictError is returned when a chip is already held by another unit.
type ConflictError struct {
	Chip   int
	Holder string
	Unit   string
}

// Error names the chip and both units.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("unit %s: chip %d already claimed by unit %s", e.Unit, e.Chip, e.Holder)
}

// Claim makes unit the exclusive holder of exactly chips, all or nothing:
// when any chip is held by another unit, nothing changes and the error is a
// *ConflictError naming that holder. Claiming again replaces the unit's
// previous claim, so an edited unit can move to other chips.
func (c *Claims) Claim(unit string, chips []int) error {
	if unit == "" {
		return fmt.Errorf("claim chips: empty unit name")
	}
	seen := map[int]bool{}
	for _, id := range chips {
		if id < 0 {
			return fmt.Errorf("unit %s: invalid chip id %d", unit, id)
		}
		if seen[id] {
			return fmt.Errorf("unit %s: chip %d listed twice", unit, id)
		}
		seen[id] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range chips {
		if h, ok := c.holder[id]; ok && h != unit {
			return &ConflictError{Chip: id, Holder: h, Unit: unit}
		}
	}
	c.releaseLocked(unit)
	for _, id := range chips {
		c.holder[id] = unit
	}
	return nil
}

// Release drops every chip unit holds.
func (c *Claims) Release(unit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(unit)
}

func (c *Claims) releaseLocked(unit string) {
	for id, h := range c.holder {
		if h == unit {
			delete(c.holder, id)
		}
	}
}

// Holding is one held chip.
type Holding struct {
	Chip int    `json:"chip"`
	Unit string `json:"unit"`
}

// Holders lists every held chip, by chip id.
func (c *Claims) Holders() []Holding {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Holding, 0, len(c.holder))
	for id, u := range c.holder {
		out = append(out, Holding{Chip: id, Unit: u})
	}
	slices.SortFunc(out, func(a, b Holding) int { return a.Chip - b.Chip })
	return out
}

// Holder returns the unit holding chip, if any.
func (c *Claims) Holder(chip int) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.holder[chip]
	return u, ok
}

// Chips returns the chips unit holds, sorted.
func (c *Claims) Chips(unit string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for id, u := range c.holder {
		if u == unit {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
