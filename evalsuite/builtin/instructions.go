package builtin

import (
	"fmt"
	"math/rand/v2"

	"github.com/ttis-dev/ttis/evalsuite"
)

var (
	topics = []string{"a rainy afternoon", "the history of bridges", "a visit to the market", "learning to swim",
		"a lighthouse keeper", "autumn in the mountains", "a robot that bakes bread", "the first day at a new school"}
	keywordPool  = []string{"river", "lantern", "copper", "meadow", "orbit", "harbor", "violet", "compass"}
	endPhrases   = []string{"Is there anything else I can help with?", "Any other questions?", "That is all."}
	promptStarts = []string{"Write a short story about %s.", "Write a brief essay on %s.", "Describe %s for a travel magazine.", "Write a poem about %s."}
)

// instruction is one verifiable instruction: its IFEval id, the sentence
// added to the prompt and its keyword arguments.
type instruction struct {
	id     string
	text   string
	kwargs map[string]any
}

// makeInstruction draws the i-th kind of instruction.
func makeInstruction(r *rand.Rand, kind int) instruction {
	switch kind {
	case 0:
		return instruction{"punctuation:no_comma", "Do not use a single comma anywhere in your reply.", map[string]any{}}
	case 1:
		// Not english_lowercase: lm-eval's check also asks langdetect,
		// whose profiles are a user asset this built-in task does without.
		return instruction{"startend:quotation", "Wrap your entire reply in double quotation marks.", map[string]any{}}
	case 2:
		n := float64(20 + 10*r.IntN(8))
		if r.IntN(2) == 0 {
			return instruction{"length_constraints:number_words", fmt.Sprintf("Use fewer than %v words.", n), map[string]any{"num_words": n, "relation": "less than"}}
		}
		return instruction{"length_constraints:number_words", fmt.Sprintf("Use at least %v words.", n), map[string]any{"num_words": n, "relation": "at least"}}
	case 3:
		return instruction{"detectable_format:title", "Give your reply a title wrapped in double angle brackets, like <<my title>>.", map[string]any{}}
	case 4:
		p := endPhrases[r.IntN(len(endPhrases))]
		return instruction{"startend:end_checker", fmt.Sprintf("End your reply with the exact phrase %q and nothing after it.", p), map[string]any{"end_phrase": p}}
	case 5:
		a := keywordPool[r.IntN(len(keywordPool))]
		b := keywordPool[r.IntN(len(keywordPool))]
		for b == a {
			b = keywordPool[r.IntN(len(keywordPool))]
		}
		return instruction{"keywords:existence", fmt.Sprintf("Mention the words %q and %q.", a, b), map[string]any{"keywords": []any{a, b}}}
	case 6:
		w := keywordPool[r.IntN(len(keywordPool))]
		return instruction{"keywords:forbidden_words", fmt.Sprintf("Never use the word %q.", w), map[string]any{"forbidden_words": []any{w}}}
	case 7:
		return instruction{"detectable_content:postscript", "Close with a postscript that starts with P.S.", map[string]any{"postscript_marker": "P.S."}}
	case 8:
		n := float64(2 + r.IntN(3))
		return instruction{"detectable_format:number_bullet_lists", fmt.Sprintf("Include exactly %v markdown bullet points, each starting with \"* \".", n), map[string]any{"num_bullets": n}}
	default:
		n := float64(1 + r.IntN(3))
		return instruction{"detectable_content:number_placeholders", fmt.Sprintf("Include at least %v placeholders in square brackets, such as [name].", n), map[string]any{"num_placeholders": n}}
	}
}

// compatible lists the kinds that can follow a first instruction without
// contradicting it (no two instructions about the ending, and nothing
// that forces capitals next to the lowercase rule).
var compatible = []int{0, 2, 5, 6, 9}

// Instructions returns n IFEval-style prompts, each with one or two
// verifiable instructions from ifeval's supported set, with fields key,
// prompt, instruction_id_list and kwargs as in google/IFEval.
func Instructions(n int, seed uint64, name string) []evalsuite.Doc {
	r := rand.New(rand.NewPCG(seed, seed^0xbb67ae8584caa73b))
	docs := make([]evalsuite.Doc, n)
	for i := range n {
		prompt := fmt.Sprintf(promptStarts[r.IntN(len(promptStarts))], topics[r.IntN(len(topics))])
		first := makeInstruction(r, r.IntN(10))
		ins := []instruction{first}
		if r.IntN(2) == 0 {
			k := compatible[r.IntN(len(compatible))]
			second := makeInstruction(r, k)
			if second.id != first.id {
				ins = append(ins, second)
			}
		}
		ids := make([]any, len(ins))
		kws := make([]any, len(ins))
		for j, in := range ins {
			prompt += " " + in.text
			ids[j] = in.id
			kws[j] = in.kwargs
		}
		docs[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("%s:%d", name, i), Fields: map[string]any{
			"key": float64(i), "prompt": prompt, "instruction_id_list": ids, "kwargs": kws,
		}}
	}
	return docs
}
