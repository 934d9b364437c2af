package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/units"
)

// Conditions are what shapes a unit's numbers, served by GET /version so
// that every benchmark and eval result records them (bench/target): the
// runtime, device and chips; the sim's time scale; the cpu engine's
// threads, key/value cache type and model file, with the file's SHA-256 computed on first request (a
// result names the exact weights it measured). A report compares only runs
// whose conditions match.
type Conditions struct {
	static map[string]string
	// modelFile is hashed once, when first asked.
	modelFile string
	once      sync.Once
	sum       string
}

// ConditionsOf reads a unit's conditions.
func ConditionsOf(u *units.Unit) *Conditions {
	c := &Conditions{static: map[string]string{"runtime": u.Runtime}}
	if u.Device != "" {
		c.static["device"] = u.Device
	}
	if len(u.Chips) > 0 {
		ids := make([]string, len(u.Chips))
		for i, ch := range u.Chips {
			ids[i] = strconv.Itoa(ch)
		}
		c.static["chips"] = strings.Join(ids, ",")
	}
	switch u.Runtime {
	case "sim":
		ts := 1.0
		if u.Sim.TimeScale != nil {
			ts = *u.Sim.TimeScale
		}
		c.static["time_scale"] = strconv.FormatFloat(ts, 'g', -1, 64)
	case "cpu":
		threads := u.CPU.Threads
		if threads <= 0 {
			threads = goruntime.NumCPU()
		}
		c.static["threads"] = strconv.Itoa(threads)
		c.static["kv_cache_type"] = u.CPU.KVType()
		c.static["model_file"] = filepath.Base(u.Model)
		c.modelFile = u.Model
	case "vllm":
		if u.Vllm.Image != "" {
			c.static["image"] = u.Vllm.Image
		}
	}
	return c
}

// Map returns the conditions, hashing the model file on first use.
func (c *Conditions) Map() map[string]string {
	if c == nil {
		return nil
	}
	m := make(map[string]string, len(c.static)+1)
	for k, v := range c.static {
		m[k] = v
	}
	if c.modelFile != "" {
		c.once.Do(func() { c.sum = fileSHA256(c.modelFile) })
		m["model_sha256"] = c.sum
	}
	return m
}

// fileSHA256 is the hex SHA-256 of a file, or a note saying why there is
// none.
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("unreadable (%v)", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Sprintf("unreadable (%v)", err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
