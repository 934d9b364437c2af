package tasks

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

// The essay haystack of prepare_niah.py (niah_single_2, niah_single_3,
// niah_multikey_1, niah_multivalue, niah_multiquery): the words of
// baber/paul_graham_essays' train split, the first num_haystack of them
// joined and cut into sentences by NLTK's sent_tokenize (Punkt with the
// English punkt_tab parameters, internal/punkt), the needles put between
// sentences at depths drawn from 40 evenly spaced percentages.
//
// ttis ships none of the three inputs. The essays are Hub data (essayData:
// lm-eval's load_dataset("baber/paul_graham_essays", split="train") pins
// no revision, so ttis reads the default branch's converted Parquet), which
// evalsuite/taskdata pulls like any task's split and hands over as
// Source.Files[RoleEssays]. The other two are the user's: --dataset
// TASK=DIR names a folder holding wonderwords/ (the wonderwords package's
// assets folder, as for niah_single_1) and punkt_tab/ (NLTK's
// tokenizers/punkt_tab/english folder, which sent_tokenize loads in NLTK
// >= 3.9.1, the version lm-eval's prepare_niah.py requires). Offline or
// without a Hub, DIR may hold paul_graham_essays/ too (the train split's
// Parquet or JSON Lines file(s), rows with a "text" column, read in
// file-name order as datasets loads them), which is then read instead of
// the pulled copy.
const (
	essayWordsDir  = "wonderwords"
	essayPunktDir  = "punkt_tab"
	essayEssaysDir = "paul_graham_essays"
	// RoleEssays is the role of the essays' Hub split.
	RoleEssays = "essays"
	// essayIncremental is generate_samples' haystack step for essays, at
	// every length.
	essayIncremental = 500
)

// essayDepths is prepare_niah's DEPTHS: np.round(np.linspace(0, 100,
// 40)).astype(int); no value falls near a half, so rounding agrees.
var essayDepths = func() []int {
	d := make([]int, 40)
	for i := range d {
		d[i] = int(math.Round(float64(i) * (100.0 / 39.0)))
	}
	return d
}()

// essayHaystack is the haystack words and the tokenizer that cuts them.
type essayHaystack struct {
	words []string
	punkt *punkt.Tokenizer
	// sents caches sent_tokenize per haystack size, as lm-eval's
	// lru_cache does; it changes no result.
	sents map[int][]string
}

// essayData is the essays' Hub split.
var essayData = []HubData{parquetSplit(RoleEssays, "baber/paul_graham_essays", "", "train")}

// essayInputs says what an essay task needs, for error messages.
func essayInputs(task string) string {
	return fmt.Sprintf("give --dataset %s=DIR, DIR holding %s/ (the wonderwords package's assets folder, site-packages/wonderwords/assets: adjectivelist.txt and nounlist.txt) and %s/ (NLTK's tokenizers/punkt_tab/english folder: abbrev_types.txt, collocations.tab, ortho_context.tab, sent_starters.txt); the essays (baber/paul_graham_essays, train split) come from the Hub (`ttisctl dataset pull %s`), or from %s/ in DIR when it has one", task, essayWordsDir, essayPunktDir, task, essayEssaysDir)
}

// loadEssayHaystack reads the Punkt parameters under dir and the essays:
// dir's own essay folder when it has one, else the pulled split at pulled.
func loadEssayHaystack(task, dir, pulled string) (*essayHaystack, error) {
	if dir == "" {
		return nil, fmt.Errorf("%s needs inputs ttis does not ship: %s", task, essayInputs(task))
	}
	p, err := punkt.Load(filepath.Join(dir, essayPunktDir))
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, essayInputs(task))
	}
	essays := filepath.Join(dir, essayEssaysDir)
	if _, err := os.Stat(essays); err != nil && pulled != "" {
		essays = pulled
	}
	rows, err := load(essays, Source{})
	if err != nil {
		return nil, fmt.Errorf("essays (baber/paul_graham_essays train split at %s): %w (%s)", essays, err, essayInputs(task))
	}
	texts := make([]string, 0, len(rows))
	for _, r := range rows {
		t, err := r.Str("text")
		if err != nil {
			return nil, fmt.Errorf("essays, row %d: %w", r.ID, err)
		}
		texts = append(texts, t)
	}
	return &essayHaystack{words: essayWords(strings.Join(texts, " ")), punkt: punkt.New(p), sents: map[int][]string{}}, nil
}

// essayWords is get_haystack("essay"): re.sub(r"\s+", " ", essay).split(" ").
func essayWords(essay string) []string {
	var b strings.Builder
	space := false
	for _, r := range essay {
		if unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.Split(b.String(), " ")
}

// sentences is cached_sent_tokenize(" ".join(words[:n]).strip()).
func (h *essayHaystack) sentences(n int) []string {
	n = max(0, min(n, len(h.words)))
	if s, ok := h.sents[n]; ok {
		return s
	}
	text := strings.TrimFunc(strings.Join(h.words[:n], " "), func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
	s := h.punkt.Tokenize(text)
	h.sents[n] = s
	return s
}

// essayContext is generate_input_output's context for the essay
// haystack: the needles between sentences at random depths.
func (g *niahGen) essayContext(numHaystack int, needles []string) string {
	sents := g.essay.sentences(numHaystack)
	picked := g.rnd.Sample(len(essayDepths), len(needles))
	pos := make([]int, 0, len(needles)+2)
	pos = append(pos, 0)
	var mid []int
	for _, i := range picked {
		mid = append(mid, int(float64(len(sents))*(float64(essayDepths[i])/100)))
	}
	sortAsc(mid)
	pos = append(append(pos, mid...), len(sents))
	var parts []string
	for i := 1; i < len(pos); i++ {
		parts = append(parts, strings.Join(sents[pos[i-1]:pos[i]], " "))
		if i-1 < len(needles) {
			parts = append(parts, needles[i-1])
		}
	}
	return strings.Join(parts, " ")
}
