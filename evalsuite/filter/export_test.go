package filter

import "github.com/dlclark/regexp2"

// RegexpOf exposes a Regex's compiled pattern to the external tests.
func RegexpOf(r *Regex) *regexp2.Regexp { return r.re }
