// Package langdetect identifies the language of a text as Python's
// langdetect 1.0.9 does (Mimino666/langdetect, itself a port of Cybozu's
// Java language-detection): character 1- to 3-grams of the normalised text
// are drawn at random, each multiplying per-language probabilities from
// n-gram profiles, in seven trials whose smoothing is jittered; the
// language whose averaged probability is highest (and above 0.1) wins.
//
// The profiles are langdetect's own files, read from the folder that holds
// them (the package's profiles/ folder, e.g. Debian python3-langdetect's
// /usr/lib/python3/dist-packages/langdetect/profiles); they are not
// shipped with ttis. The normalisation tables (tables.go) are generated
// from the same package.
//
// Randomness. langdetect draws from Python's random.Random seeded with
// DetectorFactory.seed, and callers that never set it (lm-eval's IFEval
// among them) get a generator seeded from the operating system: on a text
// whose trials disagree, the answer can change from one run to the next.
// Detect takes the seed explicitly and reproduces, draw for draw, what
// langdetect returns with DetectorFactory.seed set to it (pyrand ports
// CPython's Mersenne Twister, _randbelow and gauss). Sums follow CPython
// 3.11's sum(), which adds floats left to right (3.12 compensates), over
// the languages in file-name order (langdetect takes os.listdir's order,
// which only matters when two sums differ in their last bit).
package langdetect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// Detector parameters, as langdetect's Detector sets them.
const (
	alphaDefault   = 0.5
	alphaWidth     = 0.05
	iterationLimit = 1000
	probThreshold  = 0.1
	convThreshold  = 0.99999
	baseFreq       = 10000
	nTrial         = 7
	maxTextLength  = 10000
	nGram          = 3
)

// maxProfileBytes bounds one profile file (the largest of langdetect's 55,
// ko, is 300 KB).
const maxProfileBytes = 64 << 20

// ErrNoFeatures is langdetect's LangDetectException "No features in text."
// (nothing in the text is an n-gram of any profile).
var ErrNoFeatures = errors.New("langdetect: no features in text")

// Profiles are the loaded language profiles (DetectorFactory's
// word_lang_prob_map): for each n-gram, its probability in each language
// that has it. Profiles are read-only after Load and safe for concurrent
// use.
type Profiles struct {
	langs []string
	words map[string][]langProb
}

// langProb is one non-zero entry of an n-gram's per-language
// probabilities; the others are zero. An n-gram with no entries still
// counts as a feature, as a key of langdetect's map does.
type langProb struct {
	lang int
	p    float64
}

// profileFile is one langdetect profile (LangProfile's JSON form).
type profileFile struct {
	Name   string                 `json:"name"`
	Freq   map[string]json.Number `json:"freq"`
	NWords []json.Number          `json:"n_words"`
}

// Load reads every profile in dir, in file-name order; hidden files and
// folders are skipped, as DetectorFactory.load_profile skips them.
func Load(dir string) (*Profiles, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("langdetect profiles: %w (name langdetect's profiles folder, e.g. /usr/lib/python3/dist-packages/langdetect/profiles)", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) < 2 {
		return nil, fmt.Errorf("langdetect profiles %s: %d profile files, want langdetect's profiles folder (55 languages)", dir, len(names))
	}
	p := &Profiles{words: map[string][]langProb{}}
	for i, name := range names {
		path := filepath.Join(dir, name)
		if err := p.add(path, i); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Profiles) add(path string, index int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("langdetect profile: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxProfileBytes+1)); err != nil {
		return fmt.Errorf("langdetect profile %s: %w", path, err)
	}
	if buf.Len() > maxProfileBytes {
		return fmt.Errorf("langdetect profile %s: larger than %d bytes", path, maxProfileBytes)
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var pf profileFile
	if err := dec.Decode(&pf); err != nil {
		return fmt.Errorf("langdetect profile %s: %w", path, err)
	}
	if pf.Name == "" {
		return fmt.Errorf("langdetect profile %s: field \"name\" is missing or empty", path)
	}
	for _, l := range p.langs {
		if l == pf.Name {
			return fmt.Errorf("langdetect profile %s: field \"name\": language %q is already loaded", path, pf.Name)
		}
	}
	if len(pf.NWords) != nGram {
		return fmt.Errorf("langdetect profile %s: field \"n_words\" has %d counts, want %d", path, len(pf.NWords), nGram)
	}
	var nWords [nGram]float64
	for i, n := range pf.NWords {
		v, err := number(n)
		if err != nil {
			return fmt.Errorf("langdetect profile %s: field \"n_words\"[%d]: %w", path, i, err)
		}
		nWords[i] = v
	}
	p.langs = append(p.langs, pf.Name)
	// Map order does not matter: each n-gram's entries are kept in
	// language order because languages are added one after another.
	for word, n := range pf.Freq {
		length := utf8.RuneCountInString(word)
		if length < 1 || length > nGram {
			continue // never an n-gram of a text: langdetect keeps it unused
		}
		v, err := number(n)
		if err != nil {
			return fmt.Errorf("langdetect profile %s: field \"freq\"[%q]: %w", path, word, err)
		}
		if nWords[length-1] == 0 {
			return fmt.Errorf("langdetect profile %s: field \"n_words\"[%d] is 0 but %q is counted", path, length-1, word)
		}
		// 1.0 * freq / n_words[length - 1], in Python's float arithmetic.
		prob := v / nWords[length-1]
		entries := p.words[word]
		if prob != 0 {
			entries = append(entries, langProb{index, prob})
		}
		if entries == nil {
			entries = []langProb{}
		}
		p.words[word] = entries
	}
	return nil
}

// number reads a JSON number as Python's json module does and converts it
// to a float as Python's arithmetic would (an integer rounds once).
func number(n json.Number) (float64, error) {
	if i, err := n.Int64(); err == nil {
		return float64(i), nil
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a finite number", n)
	}
	return f, nil
}

// Languages are the loaded languages in profile order.
func (p *Profiles) Languages() []string { return append([]string(nil), p.langs...) }

// Language is one detected language and its probability.
type Language struct {
	Lang string
	Prob float64
}

// Detect is langdetect.detect(text) with DetectorFactory.seed = seed: the
// most probable language, or "unknown" when none reaches 0.1; ErrNoFeatures
// when the text has no n-gram of any profile.
func (p *Profiles) Detect(text string, seed int64) (string, error) {
	probs, err := p.Probabilities(text, seed)
	if err != nil {
		return "", err
	}
	if len(probs) == 0 {
		return "unknown", nil
	}
	return probs[0].Lang, nil
}

// Probabilities is langdetect.detect_langs(text) with
// DetectorFactory.seed = seed: the languages above 0.1, most probable
// first (ties in profile order).
func (p *Profiles) Probabilities(text string, seed int64) ([]Language, error) {
	rs := cleanText(prepareText(text))
	ngrams := p.extractNGrams(rs)
	if len(ngrams) == 0 {
		return nil, ErrNoFeatures
	}
	n := len(p.langs)
	langprob := make([]float64, n)
	rng := pyrand.New(seed)
	g := gauss{r: rng}
	prob := make([]float64, n)
	for t := 0; t < nTrial; t++ {
		for i := range prob {
			prob[i] = 1.0 / float64(n)
		}
		alpha := alphaDefault + g.next()*alphaWidth
		for i := 0; ; i++ {
			w := ngrams[rng.Below(uint32(len(ngrams)))]
			p.update(prob, w, alpha)
			if i%5 == 0 && (normalize(prob) > convThreshold || i >= iterationLimit) {
				break
			}
		}
		for j := range langprob {
			langprob[j] += prob[j] / nTrial
		}
	}
	var out []Language
	for i, pr := range langprob {
		if pr > probThreshold {
			out = append(out, Language{p.langs[i], pr})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Prob > out[j].Prob })
	return out, nil
}

// update is _update_lang_prob: every language's probability times the
// smoothing weight plus the n-gram's probability in it.
func (p *Profiles) update(prob []float64, entries []langProb, alpha float64) {
	weight := alpha / baseFreq
	k := 0
	for i := range prob {
		if k < len(entries) && entries[k].lang == i {
			prob[i] *= weight + entries[k].p
			k++
		} else {
			prob[i] *= weight + 0.0
		}
	}
}

// normalize is _normalize_prob: probabilities divided by their sum
// (CPython 3.11's left-to-right float sum); it returns the largest.
func normalize(prob []float64) float64 {
	sum := 0.0
	for _, v := range prob {
		sum += v
	}
	maxp := 0.0
	for i, v := range prob {
		q := v / sum
		if maxp < q {
			maxp = q
		}
		prob[i] = q
	}
	return maxp
}

// gauss is random.gauss(0, 1) of CPython 3.11 (Box-Muller, the second
// value kept for the next call).
type gauss struct {
	r       *pyrand.Rand
	next2   float64
	hasNext bool
}

func (g *gauss) next() float64 {
	if g.hasNext {
		g.hasNext = false
		return g.next2
	}
	x2pi := g.r.Random() * 2 * math.Pi
	g2rad := math.Sqrt(-2.0 * math.Log(1.0-g.r.Random()))
	z := math.Cos(x2pi) * g2rad
	g.next2, g.hasNext = math.Sin(x2pi)*g2rad, true
	return z
}

// prepareText is Detector.append: URLs and e-mail addresses become spaces,
// Vietnamese letters with a combining mark are recomposed, and of the first
// 10,000 characters runs of spaces are kept as one.
func prepareText(text string) []rune {
	rs := []rune(text)
	rs = replaceURLs(rs)
	rs = replaceMails(rs)
	rs = normalizeVI(rs)
	out := make([]rune, 0, min(len(rs), maxTextLength))
	pre := rune(0)
	for i := 0; i < len(rs) && i < maxTextLength; i++ {
		ch := rs[i]
		if ch != ' ' || pre != ' ' {
			out = append(out, ch)
		}
		pre = ch
	}
	return out
}

// cleanText is Detector.cleaning_text: a text with twice as many
// non-Latin characters (from U+0300 on) as Latin ones ('A'..'z') loses its
// Latin ones. langdetect means to exempt Latin Extended Additional but
// compares the block's number with its name, so nothing is exempt; the same
// is done here.
func cleanText(rs []rune) []rune {
	latin, nonLatin := 0, 0
	for _, ch := range rs {
		switch {
		case ch >= 'A' && ch <= 'z':
			latin++
		case ch >= 0x300:
			nonLatin++
		}
	}
	if latin*2 >= nonLatin {
		return rs
	}
	out := rs[:0:0]
	for _, ch := range rs {
		if ch < 'A' || ch > 'z' {
			out = append(out, ch)
		}
	}
	return out
}

// extractNGrams is _extract_ngrams: the text's 1- to 3-grams (after
// NGram's normalisation, none inside an all-capitals word) that some
// profile has, in text order.
func (p *Profiles) extractNGrams(rs []rune) [][]langProb {
	var out [][]langProb
	grams := []rune{' '}
	capital := false
	for _, c := range rs {
		ch := normalizeChar(c)
		last := grams[len(grams)-1]
		if last == ' ' {
			grams = append(grams[:0], ' ')
			capital = false
			if ch == ' ' {
				continue
			}
		} else if len(grams) >= nGram {
			grams = append(grams[:0], grams[1:]...)
		}
		grams = append(grams, ch)
		if isUpper(ch) {
			if isUpper(last) {
				capital = true
			}
		} else {
			capital = false
		}
		if capital {
			continue
		}
		for n := 1; n <= nGram && n <= len(grams); n++ {
			w := grams[len(grams)-n:]
			if n == 1 && w[0] == ' ' {
				continue
			}
			if e, ok := p.words[string(w)]; ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// isUpper is Python's str.isupper on one character: Lu or
// Other_Uppercase.
func isUpper(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }

type blockRange struct{ lo, hi rune }

func (b blockRange) has(r rune) bool { return r >= b.lo && r <= b.hi }

var cjkMap = func() map[rune]rune {
	m := map[rune]rune{}
	for _, class := range cjkClasses {
		rs := []rune(class)
		for _, r := range rs {
			m[r] = rs[0]
		}
	}
	return m
}()

// normalizeChar is NGram.normalize.
func normalizeChar(ch rune) rune {
	switch {
	case blockBasicLatin.has(ch):
		if ch < 'A' || (ch > 'Z' && ch < 'a') || ch > 'z' {
			return ' '
		}
	case blockLatin1Supplement.has(ch):
		if strings.ContainsRune(latin1Excluded, ch) {
			return ' '
		}
	case blockLatinExtendedB.has(ch):
		// Romanian comma-below letters as their cedilla forms.
		switch ch {
		case 0x219:
			return 0x15f
		case 0x21b:
			return 0x163
		}
	case blockGeneralPunctuation.has(ch):
		return ' '
	case blockArabic.has(ch):
		if ch == 0x6cc {
			return 0x64a // Farsi yeh as Arabic yeh
		}
	case blockLatinExtendedAdditional.has(ch):
		if ch >= 0x1ea0 {
			return 0x1ec3
		}
	case blockHiragana.has(ch):
		return 0x3042
	case blockKatakana.has(ch):
		return 0x30a2
	case blockBopomofo.has(ch), blockBopomofoExtended.has(ch):
		return 0x3105
	case blockCjkUnifiedIdeographs.has(ch):
		if r, ok := cjkMap[ch]; ok {
			return r
		}
	case blockHangulSyllables.has(ch):
		return 0xac00
	}
	return ch
}

// normalizeVI is NGram.normalize_vi: a Vietnamese base letter followed by
// one of five combining marks becomes the precomposed letter.
func normalizeVI(rs []rune) []rune {
	letters, marks := []rune(viLetters), []rune(viMarks)
	index := func(set []rune, r rune) int {
		for i, x := range set {
			if x == r {
				return i
			}
		}
		return -1
	}
	out := rs[:0:0]
	for i := 0; i < len(rs); i++ {
		if i+1 < len(rs) {
			if a, m := index(letters, rs[i]), index(marks, rs[i+1]); a >= 0 && m >= 0 {
				out = append(out, []rune(viComposed[m])[a])
				i++
				continue
			}
		}
		out = append(out, rs[i])
	}
	return out
}

// isURLChar is the class [-_.?&~;+=/#0-9A-Za-z] of Detector.URL_RE.
func isURLChar(r rune) bool {
	return r < utf8.RuneSelf && (isAlnum(r) || strings.ContainsRune("-_.?&~;+=/#", r))
}

func isAlnum(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
}

// replaceURLs is URL_RE.sub(' ', text) for
// https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}: each leftmost, longest match
// (up to 2076 characters after the scheme) becomes one space.
func replaceURLs(rs []rune) []rune {
	out := rs[:0:0]
	for i := 0; i < len(rs); {
		if end := urlAt(rs, i); end > i {
			out = append(out, ' ')
			i = end
			continue
		}
		out = append(out, rs[i])
		i++
	}
	return out
}

func urlAt(rs []rune, i int) int {
	j := i
	if !hasPrefix(rs[j:], "http") {
		return i
	}
	j += 4
	if j < len(rs) && rs[j] == 's' {
		// https? is greedy, but "http" followed by "s://" and by "://"
		// cannot both match, so taking the s when "://" follows is exact.
		if hasPrefix(rs[j+1:], "://") {
			j++
		}
	}
	if !hasPrefix(rs[j:], "://") {
		return i
	}
	j += 3
	k := j
	for k < len(rs) && k-j < 2076 && isURLChar(rs[k]) {
		k++
	}
	if k == j {
		return i
	}
	return k
}

func hasPrefix(rs []rune, s string) bool {
	for _, c := range s {
		if len(rs) == 0 || rs[0] != c {
			return false
		}
		rs = rs[1:]
	}
	return true
}

// Character classes of Detector.MAIL_RE.
func isMailLocal(r rune) bool {
	return r < utf8.RuneSelf && (isAlnum(r) || r == '-' || r == '_' || r == '.')
}
func isMailHost(r rune) bool   { return r < utf8.RuneSelf && (isAlnum(r) || r == '-' || r == '_') }
func isMailDomain(r rune) bool { return isMailLocal(r) }

// replaceMails is MAIL_RE.sub(' ', text) for
// [-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255} with
// Python's leftmost, greedy, backtracking semantics, worked out: the
// local part is the last 64 (or fewer) class characters before an "@";
// after it the host part takes its longest run (at most 255) and the
// domain part the longest run (at most 255) after that, or, when that run
// is empty, the host part's last character.
func replaceMails(rs []rune) []rune {
	out := rs[:0:0]
	start := 0 // first rune not yet copied
	for at := 0; at < len(rs); at++ {
		if rs[at] != '@' {
			continue
		}
		end := mailEnd(rs, at)
		if end < 0 {
			continue
		}
		lo := at
		for lo > start && at-lo < 64 && isMailLocal(rs[lo-1]) {
			lo--
		}
		if lo == at {
			continue
		}
		out = append(out, rs[start:lo]...)
		out = append(out, ' ')
		start = end
		at = end - 1
	}
	return append(out, rs[start:]...)
}

// mailEnd is where MAIL_RE's match ends given an "@" at index at, or -1
// when nothing after it matches.
func mailEnd(rs []rune, at int) int {
	h := at + 1
	a := 0
	for h+a < len(rs) && a < 255 && isMailHost(rs[h+a]) {
		a++
	}
	if a == 0 {
		return -1
	}
	b := 0
	for h+a+b < len(rs) && b < 255 && isMailDomain(rs[h+a+b]) {
		b++
	}
	if b > 0 {
		return h + a + b
	}
	if a < 2 {
		return -1
	}
	return h + a
}
