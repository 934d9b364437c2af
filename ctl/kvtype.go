package ctl

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/units"
)

// kvTypeFlag is the --kv-type flag of the model commands: a unit's [cpu]
// kv_cache_type, its help listing the names units accepts after what.
func kvTypeFlag(what string) *cli.StringFlag {
	return &cli.StringFlag{Name: "kv-type", Value: units.DefaultKVCacheType, Usage: what + ": " + units.KVCacheTypeChoices(nil)}
}

// checkKVTypeFlag refuses a --kv-type value that is not one of the names
// units accepts, listing them.
func checkKVTypeFlag(kv string) error {
	if !units.IsKVCacheType(kv) {
		return fmt.Errorf("--kv-type %q: want %s", kv, units.KVCacheTypeChoices(nil))
	}
	return nil
}
