package host

import (
	"fmt"
	"strconv"
	"strings"
)

// version is a PEP 440 release ("18.6.0.0", "2.1.0"), with a pre-release
// marker when a suffix follows ("2.5.0rc1", "1.29-dev").
type version struct {
	release []int
	pre     bool
}

// parseVersion reads the release segment of a version; a leading "v" is
// allowed, a suffix marks a pre-release and a "+local" part is ignored.
func parseVersion(s string) (version, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	s, _, _ = strings.Cut(s, "+")
	var v version
	i := 0
	for {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return version{}, fmt.Errorf("version %q: expected a number at %q", s, s[i:])
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			return version{}, fmt.Errorf("version %q: %w", s, err)
		}
		v.release = append(v.release, n)
		if j < len(s) && s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' {
			i = j + 1
			continue
		}
		v.pre = j < len(s)
		return v, nil
	}
}

// compare orders versions, padding releases with zeros (18.6 == 18.6.0.0);
// a pre-release sorts before its release.
func (a version) compare(b version) int {
	for i := range max(len(a.release), len(b.release)) {
		x, y := at(a.release, i), at(b.release, i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre:
		return -1
	default:
		return 1
	}
}

func at(r []int, i int) int {
	if i < len(r) {
		return r[i]
	}
	return 0
}

// Satisfies reports whether v meets a PEP 440 specifier set such as
// ">=18.6.0" or ">=2.1.0,<3" (the catalog's firmware and KMD pins; the
// operators ==, !=, <, <=, >, >=, ~= and "==X.Y.*").
func Satisfies(v, spec string) (bool, error) {
	have, err := parseVersion(v)
	if err != nil {
		return false, err
	}
	for _, clause := range strings.Split(spec, ",") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			return false, fmt.Errorf("specifier %q: empty clause", spec)
		}
		op := ""
		for _, o := range []string{"~=", "==", "!=", "<=", ">=", "<", ">"} {
			if strings.HasPrefix(clause, o) {
				op = o
				break
			}
		}
		if op == "" {
			return false, fmt.Errorf("specifier %q: clause %q has no operator (want >=, ==, ...)", spec, clause)
		}
		arg := strings.TrimSpace(clause[len(op):])
		if prefix, ok := strings.CutSuffix(arg, ".*"); ok && (op == "==" || op == "!=") {
			want, err := parseVersion(prefix)
			if err != nil {
				return false, fmt.Errorf("specifier %q: %w", spec, err)
			}
			match := true
			for i, n := range want.release {
				match = match && at(have.release, i) == n
			}
			if match != (op == "==") {
				return false, nil
			}
			continue
		}
		want, err := parseVersion(arg)
		if err != nil {
			return false, fmt.Errorf("specifier %q: %w", spec, err)
		}
		c := have.compare(want)
		ok := false
		switch op {
		case "==":
			ok = c == 0
		case "!=":
			ok = c != 0
		case "<":
			ok = c < 0
		case "<=":
			ok = c <= 0
		case ">":
			ok = c > 0
		case ">=":
			ok = c >= 0
		case "~=":
			if len(want.release) < 2 {
				return false, fmt.Errorf("specifier %q: ~= needs at least two release numbers", spec)
			}
			ok = c >= 0
			for i := range len(want.release) - 1 {
				ok = ok && at(have.release, i) == want.release[i]
			}
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
