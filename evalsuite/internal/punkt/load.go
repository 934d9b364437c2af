package punkt

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/units/hardened"
)

// The files of one language in NLTK's punkt_tab resource
// (tokenizers/punkt_tab/english/ for sent_tokenize's default).
const (
	AbbrevFile       = "abbrev_types.txt"
	CollocationsFile = "collocations.tab"
	SentStartersFile = "sent_starters.txt"
	OrthoContextFile = "ortho_context.tab"
)

// maxFileBytes bounds one parameter file: NLTK's English ones are tens of
// kilobytes.
const maxFileBytes = 64 << 20

// readFile reads a parameter file the hardened way (units/hardened): a
// named pipe or a device node in its place is refused, not waited on.
func readFile(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hardened.ReadFile(ctx, path, maxFileBytes)
}

// Load reads a punkt_tab language folder as NLTK 3.9's
// load_punkt_params does.
func Load(dir string) (Params, error) {
	var p Params
	read := func(name string) ([]string, error) {
		path := filepath.Join(dir, name)
		data, err := readFile(path)
		if err != nil {
			return nil, fmt.Errorf("punkt parameters: %w (name the folder holding NLTK's tokenizers/punkt_tab/english files)", err)
		}
		lines, err := Lines(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return lines, nil
	}
	lines, err := read(AbbrevFile)
	if err != nil {
		return p, err
	}
	p.AbbrevTypes = setOf(lines)
	if lines, err = read(SentStartersFile); err != nil {
		return p, err
	}
	p.SentStarters = setOf(lines)
	if lines, err = read(CollocationsFile); err != nil {
		return p, err
	}
	if p.Collocations, err = ParseCollocations(lines); err != nil {
		return p, fmt.Errorf("%s: %w", filepath.Join(dir, CollocationsFile), err)
	}
	if lines, err = read(OrthoContextFile); err != nil {
		return p, err
	}
	if p.OrthoContext, err = ParseOrthoContext(lines); err != nil {
		return p, fmt.Errorf("%s: %w", filepath.Join(dir, OrthoContextFile), err)
	}
	return p, nil
}

// Lines splits a file as Python iterates a text file opened with
// encoding="utf-8" and strips one newline from each line (tabdata's
// rm_nl): universal newlines, so "\r\n" and "\r" end lines too.
func Lines(data []byte) ([]string, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	if s == "" {
		return nil, nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n"), nil
}

func setOf(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[l] = true
	}
	return m
}

// ParseCollocations reads collocations.tab: one pair of word types a
// line, separated by a tab.
func ParseCollocations(lines []string) (map[[2]string]bool, error) {
	m := make(map[[2]string]bool, len(lines))
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want two word types separated by one tab, got %d fields", i+1, len(f))
		}
		m[[2]string{f[0], f[1]}] = true
	}
	return m, nil
}

// ParseOrthoContext reads ortho_context.tab: a word type, a tab and its
// orthographic context flags as a decimal integer; a later line for the
// same type replaces the earlier, as in a Python dict.
func ParseOrthoContext(lines []string) (map[string]int64, error) {
	m := make(map[string]int64, len(lines))
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want a word type, a tab and an integer, got %d fields", i+1, len(f))
		}
		v, err := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: flags %q are not a decimal integer", i+1, f[1])
		}
		m[f[0]] = v
	}
	return m, nil
}
