package ifeval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttis-dev/ttis/evalsuite/ifeval/internal/langdetect"
	"github.com/ttis-dev/ttis/evalsuite/ifeval/internal/wordtok"
	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

// The folders of an assets folder (LoadAssets).
const (
	// PunktDir holds NLTK's tokenizers/punkt_tab/english files.
	PunktDir = "punkt_tab"
	// LangdetectDir holds langdetect's profiles (the package's profiles/).
	LangdetectDir = "langdetect_profiles"
)

// AssetsHelp says what an assets folder holds, for error messages.
const AssetsHelp = PunktDir + "/ (NLTK's tokenizers/punkt_tab/english folder: abbrev_types.txt, collocations.tab, ortho_context.tab, sent_starters.txt) and " +
	LangdetectDir + "/ (langdetect's profiles folder, e.g. /usr/lib/python3/dist-packages/langdetect/profiles from Debian's python3-langdetect)"

// Checker checks responses with the user's assets; the zero Checker has
// none. It keeps no state between checks and is safe for concurrent use.
type Checker struct {
	// Punkt is NLTK's English sentence tokenizer (nil: the sentence and
	// word counting instructions are errors). PunktPath names where it
	// came from, or what is missing, for those errors.
	Punkt     *punkt.Tokenizer
	PunktPath string
	// Langs are langdetect's profiles (nil: the language instructions are
	// errors); LangsPath as PunktPath.
	Langs     *langdetect.Profiles
	LangsPath string
	// Seed is langdetect's DetectorFactory.seed for every detection.
	Seed int64
}

// LoadAssets reads an assets folder: PunktDir and LangdetectDir under dir,
// each optional (a missing one makes its instructions errors that name
// it); a present but unreadable one is an error now.
func LoadAssets(dir string) (*Checker, error) {
	c := &Checker{PunktPath: filepath.Join(dir, PunktDir), LangsPath: filepath.Join(dir, LangdetectDir)}
	if _, err := os.Stat(c.PunktPath); err == nil {
		p, err := punkt.Load(c.PunktPath)
		if err != nil {
			return nil, err
		}
		c.Punkt = punkt.New(p)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ifeval assets: %w", err)
	}
	if _, err := os.Stat(c.LangsPath); err == nil {
		if c.Langs, err = langdetect.Load(c.LangsPath); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ifeval assets: %w", err)
	}
	return c, nil
}

// LoadProfiles reads langdetect's profiles from dir.
func LoadProfiles(dir string) (*langdetect.Profiles, error) { return langdetect.Load(dir) }

// has says why c cannot check instruction id, if it cannot.
func (c *Checker) has(id string, n need) error {
	switch {
	case n == needPunkt && c.Punkt == nil:
		where := "no assets folder was given"
		if c.PunktPath != "" {
			where = c.PunktPath + " does not exist"
		}
		return fmt.Errorf("ifeval: instruction %q needs NLTK's English Punkt parameters (%s): give the task an assets folder holding %s", id, where, AssetsHelp)
	case n == needLangdetect && c.Langs == nil:
		where := "no assets folder was given"
		if c.LangsPath != "" {
			where = c.LangsPath + " does not exist"
		}
		return fmt.Errorf("ifeval: instruction %q needs langdetect's profiles (%s): give the task an assets folder holding %s", id, where, AssetsHelp)
	}
	return nil
}

// sentences is instructions_util.count_sentences: NLTK's Punkt sentences
// ("nltk:tokenizers/punkt/english.pickle", which NLTK >= 3.9 serves from
// punkt_tab).
func (c *Checker) sentences(s string) int { return len(c.Punkt.Tokenize(s)) }

// words is nltk.word_tokenize.
func (c *Checker) words(s string) ([]string, error) { return wordtok.WordTokenize(c.Punkt, s) }

// language is langdetect.detect with DetectorFactory.seed = c.Seed; ok is
// false where langdetect raises (no features), which lm-eval counts as
// followed.
func (c *Checker) language(s string) (lang string, ok bool) {
	l, err := c.Langs.Detect(s, c.Seed)
	if err != nil {
		return "", false
	}
	return l, true
}
