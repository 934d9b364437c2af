package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// Vocabulary is a SentencePiece-style vocabulary in GGUF's three parallel
// arrays.
type Vocabulary struct {
	Tokens []string
	Scores []float32
	// Types are tokenizer.ggml.token_type values: 1 normal, 2 unknown,
	// 3 control, 6 byte.
	Types []int32
}

// Special token ids of a synthetic vocabulary.
const (
	UnkID = 0
	BOSID = 1
	EOSID = 2
)

// minVocab is the three specials plus the 256 byte tokens.
const minVocab = 3 + 256

// commonWords seed the vocabulary with whole-word pieces, so that English
// demo prompts tokenize into a handful of tokens as with a trained
// SentencePiece model.
var commonWords = strings.Fields(`the a and to of in was he she it that is for on with as
his her they you at be this had not but from by are were one all have there what so
up out if about who get which go me when make can like time no just him know take people
into year your good some could them see other than then now look only come its over think
also back after use two how our work first well way even new want because any these give
day most us once upon little girl boy named lily tom big happy sad saw play played park
ball dog cat tree sun sky run ran fun friend friends mom dad said day went home very red
blue green toy toys house car bird fish water eat ate box door story model token text
Once One The She He They Lily Tom It`)

// vocabSeed fixes the generated word pieces, so every synthetic model of a
// given vocabulary size shares one tokenizer whatever the weight seed.
const vocabSeed = 0x5eed

// NewVocabulary generates a SentencePiece-style vocabulary of size tokens:
// <unk>, <s>, </s>, the byte tokens <0x00>..<0xFF>, single characters,
// "▁"-prefixed common words built up one character at a time (so the
// score-driven merges can reach them), then generated pieces formed by
// joining existing ones. Scores fall with the piece index, so earlier
// pieces merge first.
func NewVocabulary(size int) (*Vocabulary, error) {
	if size < minVocab+1 || size > 1<<20 {
		return nil, fmt.Errorf("vocabulary size %d: want %d to %d", size, minVocab+1, 1<<20)
	}
	v := &Vocabulary{
		Tokens: make([]string, 0, size),
		Scores: make([]float32, 0, size),
		Types:  make([]int32, 0, size),
	}
	v.add("<unk>", 2)
	v.add("<s>", 3)
	v.add("</s>", 3)
	for b := 0; b < 256; b++ {
		v.add(fmt.Sprintf("<0x%02X>", b), 6)
	}
	seen := make(map[string]bool, size)
	add := func(p string) bool {
		if len(v.Tokens) >= size || seen[p] {
			return false
		}
		seen[p] = true
		v.add(p, 1)
		return true
	}
	for _, c := range "▁etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ.,!?'\"-:;()0123456789" {
		add(string(c))
	}
	for _, w := range commonWords {
		p := "▁"
		for _, c := range w {
			p += string(c)
			add(p)
		}
	}
	// Generated pieces: a piece joined with a short continuation (one that
	// does not start a word). Short pieces are picked more often, like the
	// frequent merges of a trained model.
	rng := rand.New(rand.NewPCG(vocabSeed, uint64(size)))
	var continuations []string
	for c := 'a'; c <= 'z'; c++ {
		continuations = append(continuations, string(c))
	}
	for attempts := 0; len(v.Tokens) < size && attempts < 50*size; attempts++ {
		n := len(v.Tokens) - minVocab
		a := v.Tokens[minVocab+int(float64(n)*rng.Float64()*rng.Float64())]
		b := continuations[rng.IntN(len(continuations))]
		if utf8.RuneCountInString(a)+utf8.RuneCountInString(b) > 12 {
			continue
		}
		if add(a+b) && utf8.RuneCountInString(a+b) <= 3 && isLower(a) {
			continuations = append(continuations, a+b)
		}
	}
	if len(v.Tokens) < size {
		return nil, fmt.Errorf("vocabulary size %d: generated only %d pieces", size, len(v.Tokens))
	}
	for i := minVocab; i < len(v.Scores); i++ {
		v.Scores[i] = -float32(i - minVocab)
	}
	return v, nil
}

func (v *Vocabulary) add(tok string, typ int32) {
	v.Tokens = append(v.Tokens, tok)
	v.Scores = append(v.Scores, 0)
	v.Types = append(v.Types, typ)
}

func isLower(s string) bool {
	for _, c := range s {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
