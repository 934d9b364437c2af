// Package ifeval checks IFEval's verifiable instructions (Zhou et al.,
// 2023) as lm-evaluation-harness scores them: each prompt carries
// instruction ids with keyword arguments; a response follows an
// instruction strictly when the check passes on the response itself, and
// loosely when it passes on any of eight relaxed variants (first and/or
// last line removed, asterisks removed). Prompt-level accuracy needs every
// instruction followed; instruction-level accuracy counts instructions.
//
// Every instruction of lm-eval's registry is implemented, each after its
// class in lm_eval/tasks/ifeval/instructions.py, instructions_util.py and
// utils.py at lm-evaluation-harness commit
// 4e7e0d47f33bc71070c1d38394bafbb52b117163 (the leaderboard copy in
// lm_eval/tasks/leaderboard/ifeval differs only in style). Three kinds of
// check need the user's assets (Assets):
//   - length_constraints:number_sentences counts nltk's Punkt sentences and
//     change_case:capital_word_frequency counts the capitalised words of
//     nltk.word_tokenize: both need NLTK's English punkt_tab parameters
//     (lm-eval requires NLTK >= 3.9.1, which reads them);
//   - language:response_language, change_case:english_capital and
//     change_case:english_lowercase ask langdetect: they need its profiles.
//
// Without them those instructions are errors, never scored as failures.
// lm-eval draws a random argument where a prompt leaves one unset (its
// build_description); here that is an error too, as is an argument an
// instruction does not take (Python raises TypeError).
//
// langdetect. lm-eval calls langdetect.detect without seeding it, so
// langdetect draws its n-grams from a generator seeded by the operating
// system and a text on which its seven trials disagree can get a different
// language in each run. Here detection uses a fixed seed (Assets.Seed, 0 by
// default): the answer is langdetect's with DetectorFactory.seed set to it,
// the same in every run; on a clear text every seed gives the same answer.
package ifeval

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kwargs are one instruction's arguments (unset values already removed, as
// utils.py keeps only truthy ones).
type Kwargs map[string]any

// check reports whether resp follows the instruction.
type check func(c *Checker, resp string) (bool, error)

// instruction is one registered instruction: its argument names and a
// constructor that validates the arguments once per prompt.
type instruction struct {
	args  []string
	needs need
	build func(kw Kwargs) (check, error)
}

type need int

const (
	needNothing need = iota
	needPunkt
	needLangdetect
)

// Supported lists the implemented instruction ids: lm-eval's
// INSTRUCTION_DICT.
func Supported() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NeedsPunkt lists the instructions that need NLTK's English Punkt
// parameters; NeedsLangdetect those that need langdetect's profiles.
func NeedsPunkt() []string      { return needing(needPunkt) }
func NeedsLangdetect() []string { return needing(needLangdetect) }

func needing(n need) []string {
	var out []string
	for k, in := range registry {
		if in.needs == n {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Result is one prompt's outcome.
type Result struct {
	Strict []bool
	Loose  []bool
}

// PromptStrict reports whether every instruction was followed strictly.
func (r Result) PromptStrict() bool { return all(r.Strict) }

// PromptLoose reports whether every instruction was followed loosely.
func (r Result) PromptLoose() bool { return all(r.Loose) }

func all(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

// Check scores response against the instructions with no assets: the
// instructions that need them are errors.
func Check(response string, ids []string, kwargs []Kwargs) (Result, error) {
	return (&Checker{}).Check(response, ids, kwargs)
}

// Check scores response against the instructions (utils.py's
// test_instruction_following_strict and _loose).
func (c *Checker) Check(response string, ids []string, kwargs []Kwargs) (Result, error) {
	if len(ids) == 0 {
		return Result{}, fmt.Errorf("ifeval: no instructions")
	}
	if len(kwargs) != len(ids) {
		return Result{}, fmt.Errorf("ifeval: %d instructions but %d kwargs entries", len(ids), len(kwargs))
	}
	checks := make([]check, len(ids))
	for i, id := range ids {
		in, ok := registry[id]
		if !ok {
			return Result{}, fmt.Errorf("ifeval: instruction %q is not one of lm-eval's IFEval instructions", id)
		}
		if err := c.has(id, in.needs); err != nil {
			return Result{}, err
		}
		for k := range kwargs[i] {
			if !contains(in.args, k) {
				return Result{}, fmt.Errorf("ifeval: %s: argument %q is not one it takes (%s)", id, k, strings.Join(in.args, ", "))
			}
		}
		ch, err := in.build(kwargs[i])
		if err != nil {
			return Result{}, fmt.Errorf("ifeval: %s: %w", id, err)
		}
		checks[i] = ch
	}
	variants := looseVariants(response)
	var res Result
	for i, ch := range checks {
		strict := false
		if pyStrip(response) != "" {
			v, err := ch(c, response)
			if err != nil {
				return Result{}, fmt.Errorf("ifeval: %s: %w", ids[i], err)
			}
			strict = v
		}
		loose := false
		for _, r := range variants {
			if pyStrip(r) == "" {
				continue
			}
			v, err := ch(c, r)
			if err != nil {
				return Result{}, fmt.Errorf("ifeval: %s: %w", ids[i], err)
			}
			if v {
				loose = true
				break
			}
		}
		res.Strict = append(res.Strict, strict)
		res.Loose = append(res.Loose, loose)
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// looseVariants are the eight relaxed forms of a response, in utils.py's
// order.
func looseVariants(r string) []string {
	lines := strings.Split(r, "\n")
	join := func(ls []string) string { return pyStrip(strings.Join(ls, "\n")) }
	var first, last, both string
	if len(lines) > 1 {
		first = join(lines[1:])
		last = join(lines[:len(lines)-1])
	}
	if len(lines) > 2 {
		both = join(lines[1 : len(lines)-1])
	}
	noStar := func(s string) string { return strings.ReplaceAll(s, "*", "") }
	return []string{r, noStar(r), first, last, both, noStar(first), noStar(last), noStar(both)}
}

// --- arguments ---

func kwString(kw Kwargs, key string) (string, error) {
	v, ok := kw[key]
	if !ok {
		return "", fmt.Errorf("missing argument %q (lm-eval would draw one at random)", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q is a %T, want text", key, v)
	}
	return s, nil
}

// kwInt reads a count; lm-eval draws a random one for a negative value as
// for a missing one.
func kwInt(kw Kwargs, key string) (int, error) {
	v, ok := kw[key]
	if !ok {
		return 0, fmt.Errorf("missing argument %q (lm-eval would draw one at random)", key)
	}
	var n int
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("argument %q = %v is not an integer", key, x)
		}
		n = int(x)
	case int:
		n = x
	default:
		return 0, fmt.Errorf("argument %q is a %T, want a number", key, v)
	}
	if n < 0 {
		return 0, fmt.Errorf("argument %q = %d is negative (lm-eval would draw one at random)", key, n)
	}
	return n, nil
}

func kwStrings(kw Kwargs, key string) ([]string, error) {
	v, ok := kw[key]
	if !ok {
		return nil, fmt.Errorf("missing argument %q (lm-eval would draw some at random)", key)
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("argument %q[%d] is a %T, want text", key, i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("argument %q is a %T, want a list of text", key, v)
}

// relation reads IFEval's comparison ("less than" or "at least").
func relation(kw Kwargs, key string) (func(n, threshold int) bool, error) {
	rel, err := kwString(kw, key)
	if err != nil {
		return nil, err
	}
	switch rel {
	case "less than":
		return func(n, t int) bool { return n < t }, nil
	case "at least":
		return func(n, t int) bool { return n >= t }, nil
	}
	return nil, fmt.Errorf("argument %q = %q, want \"less than\" or \"at least\"", key, rel)
}
