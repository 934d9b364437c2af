package metric

import (
	"math"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Word error rate as lmms-eval's librispeech task computes it
// (lmms_eval/tasks/librispeech/utils.py, compute_wer and librispeech_wer):
// each transcript has <|...|> markers removed, spaces collapsed and spaces
// before punctuation dropped (remove_sp); English text then goes through
// Whisper's EnglishTextNormalizer and, because of how that function's
// branches fall through, through Whisper's BasicTextNormalizer too; the
// words left after sacreBLEU's "none" tokenizer with lower-casing and
// removal of all-punctuation tokens are compared by edit distance, summed
// over the corpus and divided by the summed reference length, in percent.
//
// Where ttis differs from Whisper's EnglishTextNormalizer: it does not
// rewrite spelled-out and written numbers into one form
// (EnglishNumberNormalizer: "twenty five" → "25", "1st" → "first"…) and
// does not map British spellings to American ones (english.json's 1,700
// pairs). Both only matter where a transcript and its reference write the
// same number or word differently; LibriSpeech references spell numbers
// out in capitals, so a model that writes digits scores worse here than in
// lmms-eval.

var (
	specialTokens  = regexp.MustCompile(`<\|.*?\|>`)
	spaces         = regexp.MustCompile(`\s+`)
	spaceBeforePct = regexp.MustCompile(` ?([!,.?;:])`)
	bracketed      = regexp.MustCompile(`[<\[][^>\]]*[>\]]`)
	parenthesized  = regexp.MustCompile(`\(([^)]+?)\)`)
	fillers        = regexp.MustCompile(`\b(hmm|mm|mhm|mmm|uh|um)\b`)
	spaceApos      = regexp.MustCompile(`\s+'`)
	digitComma     = regexp.MustCompile(`(\d),(\d)`)
	periodNoDigit  = regexp.MustCompile(`\.([^0-9]|$)`)
	symbolNoDigit  = regexp.MustCompile(`[.$¢€£]([^0-9])`)
	percentNoDigit = regexp.MustCompile(`([^0-9])%`)
)

// englishReplacers are Whisper's EnglishTextNormalizer replacers, in
// their order: contractions, titles, perfect tenses, general contractions.
var englishReplacers = func() []struct {
	re  *regexp.Regexp
	rep string
} {
	pairs := [][2]string{
		{`\bwon't\b`, "will not"}, {`\bcan't\b`, "can not"}, {`\blet's\b`, "let us"}, {`\bain't\b`, "aint"},
		{`\by'all\b`, "you all"}, {`\bwanna\b`, "want to"}, {`\bgotta\b`, "got to"}, {`\bgonna\b`, "going to"},
		{`\bi'ma\b`, "i am going to"}, {`\bimma\b`, "i am going to"}, {`\bwoulda\b`, "would have"},
		{`\bcoulda\b`, "could have"}, {`\bshoulda\b`, "should have"}, {`\bma'am\b`, "madam"},
		{`\bmr\b`, "mister "}, {`\bmrs\b`, "missus "}, {`\bst\b`, "saint "}, {`\bdr\b`, "doctor "},
		{`\bprof\b`, "professor "}, {`\bcapt\b`, "captain "}, {`\bgov\b`, "governor "}, {`\bald\b`, "alderman "},
		{`\bgen\b`, "general "}, {`\bsen\b`, "senator "}, {`\brep\b`, "representative "}, {`\bpres\b`, "president "},
		{`\brev\b`, "reverend "}, {`\bhon\b`, "honorable "}, {`\basst\b`, "assistant "}, {`\bassoc\b`, "associate "},
		{`\blt\b`, "lieutenant "}, {`\bcol\b`, "colonel "}, {`\bjr\b`, "junior "}, {`\bsr\b`, "senior "},
		{`\besq\b`, "esquire "},
		{`'d been\b`, " had been"}, {`'s been\b`, " has been"}, {`'d gone\b`, " had gone"}, {`'s gone\b`, " has gone"},
		{`'d done\b`, " had done"}, {`'s got\b`, " has got"},
		{`n't\b`, " not"}, {`'re\b`, " are"}, {`'s\b`, " is"}, {`'d\b`, " would"}, {`'ll\b`, " will"},
		{`'t\b`, " not"}, {`'ve\b`, " have"}, {`'m\b`, " am"},
	}
	out := make([]struct {
		re  *regexp.Regexp
		rep string
	}, len(pairs))
	for i, p := range pairs {
		out[i].re, out[i].rep = regexp.MustCompile(p[0]), p[1]
	}
	return out
}()

// additionalDiacritics are the letters Unicode does not decompose that
// Whisper maps by hand.
var additionalDiacritics = map[rune]string{
	'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O", 'æ': "ae", 'Æ': "AE", 'ß': "ss", 'ẞ': "SS",
	'đ': "d", 'Đ': "D", 'ð': "d", 'Ð': "D", 'þ': "th", 'Þ': "th", 'ł': "l", 'Ł': "L",
}

// markSymbolPunct is Unicode's M, S and P categories, which Whisper's
// normalizers turn into spaces.
func markSymbolPunct(r rune) bool {
	return unicode.In(r, unicode.M, unicode.S, unicode.P)
}

// removeSymbolsAndDiacritics is Whisper's remove_symbols_and_diacritics:
// NFKD, keep the runes in keep, map additionalDiacritics, drop
// non-spacing marks, turn other marks, symbols and punctuation into
// spaces.
func removeSymbolsAndDiacritics(s, keep string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		switch {
		case strings.ContainsRune(keep, r):
			b.WriteRune(r)
		case additionalDiacritics[r] != "":
			b.WriteString(additionalDiacritics[r])
		case unicode.Is(unicode.Mn, r):
		case markSymbolPunct(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// removeSymbols is Whisper's remove_symbols: NFKC, then marks, symbols
// and punctuation become spaces.
func removeSymbols(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKC.String(s) {
		if markSymbolPunct(r) {
			b.WriteByte(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// RemoveSpecial is lmms-eval's remove_sp: <|...|> markers become spaces,
// runs of whitespace one space, a space before !,.?;: is dropped, and
// leading spaces are trimmed.
func RemoveSpecial(s string) string {
	s = specialTokens.ReplaceAllString(s, " ")
	s = spaces.ReplaceAllString(s, " ")
	s = spaceBeforePct.ReplaceAllString(s, "$1")
	return strings.TrimLeft(s, " ")
}

// EnglishNormalize is Whisper's EnglishTextNormalizer without its number
// and British-spelling standardisation (see the package note above).
func EnglishNormalize(s string) string {
	s = strings.ToLower(s)
	s = bracketed.ReplaceAllString(s, "")
	s = parenthesized.ReplaceAllString(s, "")
	s = fillers.ReplaceAllString(s, "")
	s = spaceApos.ReplaceAllString(s, "'")
	for _, r := range englishReplacers {
		s = r.re.ReplaceAllString(s, r.rep)
	}
	s = digitComma.ReplaceAllString(s, "$1$2")
	s = periodNoDigit.ReplaceAllString(s, " $1")
	s = removeSymbolsAndDiacritics(s, ".%$¢€£")
	s = symbolNoDigit.ReplaceAllString(s, " $1")
	s = percentNoDigit.ReplaceAllString(s, "$1 ")
	return spaces.ReplaceAllString(s, " ")
}

// BasicNormalize is Whisper's BasicTextNormalizer (no diacritics removal,
// no letter splitting).
func BasicNormalize(s string) string {
	s = strings.ToLower(s)
	s = bracketed.ReplaceAllString(s, "")
	s = parenthesized.ReplaceAllString(s, "")
	s = strings.ToLower(removeSymbols(s))
	return spaces.ReplaceAllString(s, " ")
}

// WERWords is the word list a transcript is scored on: remove_sp, the
// normalizers for language ("en" gets the English and then the basic
// one; others the basic one), then the evaluation tokenizer (lower-case,
// tokens made only of punctuation dropped).
func WERWords(s, language string) []string {
	s = RemoveSpecial(s)
	if language == "en" {
		s = EnglishNormalize(s)
	}
	s = BasicNormalize(s)
	var out []string
	for _, tok := range strings.Split(strings.ToLower(s), " ") {
		if tok == "" || allPunct(tok) {
			continue
		}
		out = append(out, tok)
	}
	return out
}

// allPunct reports whether every rune of tok is punctuation (sacreBLEU's
// remove_punctuation test on the Unicode category P).
func allPunct(tok string) bool {
	for _, r := range tok {
		if !unicode.IsPunct(r) {
			return false
		}
	}
	return true
}

// WordEdits is the Levenshtein distance between two word lists
// (substitutions, insertions and deletions each cost 1), as the
// editdistance package computes it on lists.
func WordEdits(ref, hyp []string) int {
	prev := make([]int, len(hyp)+1)
	cur := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			c := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(hyp)]
}

// DocWER scores one transcript for the corpus WER: its edit count and the
// reference's length in words.
func DocWER(ref, hyp, language string) []float64 {
	r, h := WERWords(ref, language), WERWords(hyp, language)
	return []float64{float64(WordEdits(r, h)), float64(len(r))}
}

// CorpusWER is lmms-eval's librispeech_wer aggregation: the summed edits
// over the summed reference words, times 100 (lmms-eval reports WER in
// percent). Each document's values are DocWER's pair; NaN when the
// references hold no words.
func CorpusWER(perDoc [][]float64) float64 {
	var edits, words float64
	for _, d := range perDoc {
		if len(d) != 2 {
			continue
		}
		edits += d[0]
		words += d[1]
	}
	if words == 0 {
		return math.NaN()
	}
	return 100 * edits / words
}
