// Package builtin generates evaluation documents deterministically, so that
// evals run with no download: arithmetic word problems whose answers follow
// GSM8K's "#### N" convention, and multiple-choice arithmetic questions in
// MMLU's shape (question, choices, answer index). The same seed always
// yields the same documents on every platform (math/rand/v2's PCG).
package builtin

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/ttis-dev/ttis/evalsuite"
)

// Default seeds of the evaluated split and of the few-shot pool; they
// differ so that examples are never the evaluated questions.
const (
	TestSeed    = 20260101
	FewShotSeed = 20260102
)

var (
	names = []string{"Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Liam"}
	items = []string{"apples", "marbles", "stickers", "pencils", "cookies", "stamps", "shells", "cards"}
)

// Arithmetic returns n word problems with fields question and answer (a
// short worked solution ending "#### N"). name labels each doc's Source.
func Arithmetic(n int, seed uint64, name string) []evalsuite.Doc {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	docs := make([]evalsuite.Doc, n)
	for i := range n {
		q, a := wordProblem(r)
		docs[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("%s:%d", name, i), Fields: map[string]any{"question": q, "answer": a}}
	}
	return docs
}

func wordProblem(r *rand.Rand) (question, answer string) {
	who := names[r.IntN(len(names))]
	what := items[r.IntN(len(items))]
	switch r.IntN(4) {
	case 0:
		a, b := 5+r.IntN(60), 2+r.IntN(40)
		c := 1 + r.IntN(a+b-1)
		s := a + b
		y := s - c
		question = fmt.Sprintf("%s has %d %s. %s buys %d more %s and then gives %d to a friend. How many %s does %s have now?", who, a, what, who, b, what, c, what, who)
		answer = fmt.Sprintf("%s has %d + %d = %d %s after buying more.\nAfter giving some away, %s has %d - %d = %d %s.\n#### %d", who, a, b, s, what, who, s, c, y, what, y)
	case 1:
		a, b := 2+r.IntN(11), 2+r.IntN(11)
		p := a * b
		c := r.IntN(p)
		y := p - c
		question = fmt.Sprintf("A shelf holds %d rows of %d %s each. %d %s are taken away. How many %s are left on the shelf?", a, b, what, c, what, what)
		answer = fmt.Sprintf("The shelf holds %d * %d = %d %s.\nAfter %d are taken away, %d - %d = %d are left.\n#### %d", a, b, p, what, c, p, c, y, y)
	case 2:
		a, b, c := 3+r.IntN(30), 2+r.IntN(9), 1+r.IntN(25)
		p := a * b
		y := p + c
		question = fmt.Sprintf("%s reads %d pages every day for %d days, then %d more pages on the last evening. How many pages did %s read in total?", who, a, b, c, who)
		answer = fmt.Sprintf("%s reads %d * %d = %d pages over the days.\nWith the last evening, %d + %d = %d pages.\n#### %d", who, a, b, p, p, c, y, y)
	default:
		b := 2 + r.IntN(8)
		q := 2 + r.IntN(15)
		c := r.IntN(b)
		a := b*q + c
		question = fmt.Sprintf("%s shares %d %s equally among %d friends and keeps the %d that are left over. How many %s does each friend get?", who, a, what, b, c, what)
		answer = fmt.Sprintf("%s shares %d - %d = %d %s.\nEach friend gets %d / %d = %d %s.\n#### %d", who, a, c, a-c, what, a-c, b, q, what, q)
	}
	return question, answer
}

// MultipleChoice returns n questions "What is X op Y?" with four numeric
// choices, fields question, choices ([]any of text, as decoded JSON) and
// answer (the gold index).
func MultipleChoice(n int, seed uint64, name string) []evalsuite.Doc {
	r := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	docs := make([]evalsuite.Doc, n)
	for i := range n {
		x, y := 2+r.IntN(98), 2+r.IntN(98)
		var op string
		var v int
		switch r.IntN(3) {
		case 0:
			op, v = "+", x+y
		case 1:
			if x < y {
				x, y = y, x
			}
			op, v = "-", x-y
		default:
			x, y = 2+r.IntN(19), 2+r.IntN(19)
			op, v = "*", x*y
		}
		opts := []int{v}
		for _, d := range []int{1, -1, 10, -10, 2, -2, 11, 9} {
			if len(opts) == 4 {
				break
			}
			if c := v + d; c >= 0 && !contains(opts, c) && r.IntN(3) != 0 {
				opts = append(opts, c)
			}
		}
		for d := 3; len(opts) < 4; d++ {
			if !contains(opts, v+d) {
				opts = append(opts, v+d)
			}
		}
		r.Shuffle(len(opts), func(a, b int) { opts[a], opts[b] = opts[b], opts[a] })
		gold := 0
		choices := make([]any, 4)
		for j, o := range opts {
			choices[j] = strconv.Itoa(o)
			if o == v {
				gold = j
			}
		}
		docs[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("%s:%d", name, i), Fields: map[string]any{
			"question": fmt.Sprintf("What is %d %s %d?", x, op, y),
			"choices":  choices,
			"answer":   float64(gold),
			"subject":  "elementary arithmetic",
		}}
	}
	return docs
}

func contains(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}
