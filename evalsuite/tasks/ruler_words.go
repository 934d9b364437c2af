package tasks

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite/dataset"
)

// wonderwordsPairs is prepare_niah's WORDS: the sorted, deduplicated
// "adjective-noun" strings of wonderwords' default lists, which ttis does
// not ship: the user points --dataset at the installed package's assets
// folder (site-packages/wonderwords/assets, holding adjectivelist.txt and
// nounlist.txt), so the lists are the ones their lm-eval would load. The
// 6 million or so pairs are kept as index pairs, sorted by their text.
type wonderwordsPairs struct {
	adjs, nouns []string
	pairs       [][2]uint32
}

// readWordList is wonderwords' _get_words_from_text_file: one word a
// line, trailing whitespace removed.
func readWordList(dir, name string) ([]string, error) {
	raw, err := dataset.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("wonderwords word list: %w (pass the installed package's assets folder, site-packages/wonderwords/assets)", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		out = append(out, strings.TrimRightFunc(sc.Text(), func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' }))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no words", filepath.Join(dir, name))
	}
	return out, nil
}

func loadWonderwordsPairs(dir string) (*wonderwordsPairs, error) {
	if dir == "" {
		return nil, fmt.Errorf("this RULER task draws its keys from wonderwords' word lists, which ttis does not ship: pass --dataset TASK=DIR, DIR being the assets folder of the wonderwords package lm-eval uses (site-packages/wonderwords/assets, holding adjectivelist.txt and nounlist.txt)")
	}
	adjs, err := readWordList(dir, "adjectivelist.txt")
	if err != nil {
		return nil, err
	}
	nouns, err := readWordList(dir, "nounlist.txt")
	if err != nil {
		return nil, err
	}
	w := &wonderwordsPairs{adjs: adjs, nouns: nouns}
	w.pairs = make([][2]uint32, 0, len(adjs)*len(nouns))
	for a := range adjs {
		for n := range nouns {
			w.pairs = append(w.pairs, [2]uint32{uint32(a), uint32(n)})
		}
	}
	sort.Slice(w.pairs, func(i, j int) bool { return w.cmp(w.pairs[i], w.pairs[j]) < 0 })
	// set(): equal strings from different pairs (or repeated list
	// entries) count once.
	out := w.pairs[:0]
	for i, p := range w.pairs {
		if i == 0 || w.cmp(out[len(out)-1], p) != 0 {
			out = append(out, p)
		}
	}
	w.pairs = out
	return w, nil
}

// cmp compares adj1+"-"+noun1 with adj2+"-"+noun2 byte by byte (Python's
// code point order, the lists being UTF-8) without building the strings.
func (w *wonderwordsPairs) cmp(x, y [2]uint32) int {
	a := [3]string{w.adjs[x[0]], "-", w.nouns[x[1]]}
	b := [3]string{w.adjs[y[0]], "-", w.nouns[y[1]]}
	ai, ao, bi, bo := 0, 0, 0, 0
	for {
		for ai < 3 && ao == len(a[ai]) {
			ai, ao = ai+1, 0
		}
		for bi < 3 && bo == len(b[bi]) {
			bi, bo = bi+1, 0
		}
		switch {
		case ai == 3 && bi == 3:
			return 0
		case ai == 3:
			return -1
		case bi == 3:
			return 1
		}
		ca, cb := a[ai][ao], b[bi][bo]
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		ao++
		bo++
	}
}

func (w *wonderwordsPairs) len() int { return len(w.pairs) }

func (w *wonderwordsPairs) at(i int) string {
	p := w.pairs[i]
	return w.adjs[p[0]] + "-" + w.nouns[p[1]]
}
