package release

import (
	"slices"
	"strings"
)

// Group is blockers said together: those that share a cause (the Hub
// could not be reached, the run is offline), with the one command that
// fixes them all, or those that share a message. A report names each
// check once and each cause once.
type Group struct {
	// Cause is the shared cause ("" for a group by message).
	Cause string
	// Fix is the command that fixes every blocker of the group.
	Fix   string
	Items []Blocker
}

// GroupBlockers groups blockers by cause, else by identical message, in
// the order the groups first appear.
func GroupBlockers(list []Blocker) []Group {
	idx := map[string]int{}
	var out []Group
	for _, b := range list {
		key := "message\x00" + b.Message
		if b.Cause != "" {
			key = "cause\x00" + b.Cause
		}
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, Group{Cause: b.Cause})
		}
		out[i].Items = append(out[i].Items, b)
	}
	for i := range out {
		var fixes []string
		for _, b := range out[i].Items {
			if b.Fix != "" {
				fixes = append(fixes, b.Fix)
			}
		}
		out[i].Fix = MergeFixes(fixes)
	}
	return out
}

// MergeFixes makes one command of commands that differ only in their
// arguments ("ttisctl dataset pull a" and "ttisctl dataset pull b
// --catalog-model M" give "ttisctl dataset pull a b --catalog-model M");
// different commands are kept apart, joined by "; ".
func MergeFixes(fixes []string) string {
	const prefixWords = 3 // "ttisctl dataset pull"
	type merged struct {
		args, flags []string
	}
	var order []string
	by := map[string]*merged{}
	for _, f := range fixes {
		w := strings.Fields(f)
		if len(w) < prefixWords {
			if _, ok := by[f]; !ok {
				by[f] = nil
				order = append(order, f)
			}
			continue
		}
		prefix := strings.Join(w[:prefixWords], " ")
		m, ok := by[prefix]
		if !ok || m == nil {
			m = &merged{}
			by[prefix] = m
			order = append(order, prefix)
		}
		for i := prefixWords; i < len(w); i++ {
			switch {
			case strings.HasPrefix(w[i], "-"):
				flag := w[i]
				if i+1 < len(w) && !strings.HasPrefix(w[i+1], "-") && !strings.Contains(flag, "=") {
					i++
					flag += " " + w[i]
				}
				if !slices.Contains(m.flags, flag) {
					m.flags = append(m.flags, flag)
				}
			case !slices.Contains(m.args, w[i]):
				m.args = append(m.args, w[i])
			}
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		m := by[k]
		if m == nil {
			out = append(out, k)
			continue
		}
		out = append(out, strings.Join(slices.Concat([]string{k}, m.args, m.flags), " "))
	}
	return strings.Join(out, "; ")
}
