package check

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// Prompts of the text tests: each asks for an answer long enough to cut
// and compare, on any model (a random-weight one answers at length too).
const (
	countPrompt = "Count from 1 to 100, separated by commas: 1, 2, 3,"
	storyPrompt = "Write a long story about a lighthouse keeper and the storm that changed her life."
	colorPrompt = "Here is a list of ten random colors, one per line:"
)

// completionAnswer and chatAnswer are the fields of a non-streamed answer
// the tests read.
type completionAnswer struct {
	Choices []struct {
		Index        int              `json:"index"`
		Text         *string          `json:"text"`
		FinishReason string           `json:"finish_reason"`
		Logprobs     *openai.Logprobs `json:"logprobs"`
	} `json:"choices"`
	Usage *openai.Usage `json:"usage"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

type chatAnswer struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content *string `json:"content"`
			// Reasoning models answer their thinking apart
			// (vLLM's reasoning parsers).
			ReasoningContent *string    `json:"reasoning_content"`
			Reasoning        *string    `json:"reasoning"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
		Logprobs     *struct {
			Content []chatLogprob `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *openai.Usage `json:"usage"`
}

// text is a chat choice's whole output: its reasoning then its content,
// as a stream carries them.
func (c *chatAnswer) text(i int) string {
	m := c.Choices[i].Message
	var b strings.Builder
	for _, p := range []*string{m.ReasoningContent, m.Reasoning, m.Content} {
		if p != nil {
			b.WriteString(*p)
		}
	}
	return b.String()
}

// apiCase is one endpoint with its request body.
type apiCase struct {
	name string
	path string
	body map[string]any
}

// both are the completions and chat forms of a request.
func (e *env) both(prompt string, fields map[string]any) []apiCase {
	c := map[string]any{"model": e.cfg.Model, "prompt": prompt}
	ch := map[string]any{"model": e.cfg.Model, "messages": []map[string]string{{"role": "user", "content": prompt}}}
	maps.Copy(c, fields)
	maps.Copy(ch, fields)
	return []apiCase{{"completions", openai.Completions.Path(), c}, {"chat", openai.Chat.Path(), ch}}
}

func clone(m map[string]any) map[string]any { return maps.Clone(m) }

// generated is one non-streamed answer reduced to what the tests compare.
type generated struct {
	ok      bool
	texts   []string
	indexes []int
	finish  []string
	usage   *openai.Usage
	comp    *completionAnswer
	chat    *chatAnswer
	raw     answer
}

// generate sends a non-streamed completion or chat request and records a
// failed check when no well-formed answer comes back.
func (e *env) generate(ctx context.Context, r *rec, check string, c apiCase) generated {
	a := e.post(ctx, c.path, c.body)
	g := generated{raw: a}
	if a.status == http.StatusBadRequest && strings.Contains(strings.ToLower(a.message()), "maximum context length") {
		// The request itself (a tool's definition in the chat template)
		// is longer than a small model's context: the test cannot be
		// made, which is not a broken promise.
		r.sent(false)
		r.cannot(check + ": the request does not fit the model's context: " + a.message())
		return g
	}
	if !a.ok() {
		r.sent(true)
		r.check(false, spectest.Evidence{Check: check, Request: compact(c.body), Expected: "HTTP 200 with an answer", Got: a.describe()})
		return g
	}
	var err error
	if c.path == openai.Completions.Path() {
		var ca completionAnswer
		if err = json.Unmarshal(a.body, &ca); err == nil {
			g.comp, g.usage = &ca, ca.Usage
			for _, ch := range ca.Choices {
				if ch.Text == nil {
					err = fmt.Errorf("choice %d has no text", ch.Index)
					break
				}
				g.texts, g.indexes, g.finish = append(g.texts, *ch.Text), append(g.indexes, ch.Index), append(g.finish, ch.FinishReason)
			}
		}
	} else {
		var ca chatAnswer
		if err = json.Unmarshal(a.body, &ca); err == nil {
			g.chat, g.usage = &ca, ca.Usage
			for i, ch := range ca.Choices {
				g.texts, g.indexes, g.finish = append(g.texts, ca.text(i)), append(g.indexes, ch.Index), append(g.finish, ch.FinishReason)
			}
		}
	}
	if err == nil && len(g.texts) == 0 {
		err = fmt.Errorf("no choices")
	}
	if err != nil {
		r.sent(true)
		r.check(false, spectest.Evidence{Check: check, Request: compact(c.body), Expected: "a well-formed answer", Got: err.Error() + ": " + a.describe()})
		return g
	}
	r.sent(false)
	g.ok = true
	return g
}

func streamAgrees(ctx context.Context, e *env, t spectest.Test, r *rec) {
	m := first(t.Params.MaxTokens, 24)
	for _, c := range e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0, "seed": 1}) {
		g := e.generate(ctx, r, c.name+" non-streamed", c)
		if !g.ok {
			continue
		}
		s := e.stream(ctx, c.path, clone(c.body))
		r.sent(s.err != nil)
		want := fmt.Sprintf("text %q, finish_reason %q", g.texts[0], g.finish[0])
		ok := s.err == nil && s.text == g.texts[0] && s.finish == g.finish[0]
		got := s.describe()
		if ok && s.hasUsage && g.usage != nil && s.completionTokens != g.usage.CompletionTokens {
			ok = false
			got += fmt.Sprintf(", usage.completion_tokens %d (non-streamed %d)", s.completionTokens, g.usage.CompletionTokens)
		}
		r.check(ok, spectest.Evidence{Check: c.name + ": streamed equals non-streamed", Request: compact(c.body), Expected: want, Got: got})
	}
}

func maxTokens(ctx context.Context, e *env, t spectest.Test, r *rec) {
	for _, m := range orDefault(t.Params.MaxTokens, []int{1, 5, 16}) {
		for _, c := range e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0}) {
			check := fmt.Sprintf("%s max_tokens %d", c.name, m)
			g := e.generate(ctx, r, check, c)
			if !g.ok {
				continue
			}
			if g.usage == nil {
				r.check(false, spectest.Evidence{Check: check, Request: compact(c.body), Expected: "usage.completion_tokens", Got: "no usage: " + g.raw.describe()})
				continue
			}
			n, f := g.usage.CompletionTokens, g.finish[0]
			// EOS may come with the last allowed token (stop at m).
			ok := n >= 0 && n <= m && (f == "length" || f == "stop") && (f != "length" || n == m)
			r.check(ok, spectest.Evidence{Check: check, Request: compact(c.body),
				Expected: fmt.Sprintf("at most %d completion tokens; finish_reason length when all %d were used, stop otherwise", m, m),
				Got:      fmt.Sprintf("%d completion tokens, finish_reason %q, text %q", n, f, g.texts[0])})
		}
	}
}

// stopString picks a stop string from an answer: a few characters from
// about frac of the way in, not blank.
func stopString(text string, frac float64) string {
	p := int(float64(len(text)) * frac)
	for ; p < len(text); p++ {
		if !utf8.RuneStart(text[p]) {
			continue
		}
		end := min(p+5, len(text))
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		if s := text[p:end]; strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

func stop(ctx context.Context, e *env, t spectest.Test, r *rec) {
	m := first(t.Params.MaxTokens, 48)
	cases := e.both(countPrompt, map[string]any{"max_tokens": m, "temperature": 0, "seed": 1})
	// Completions: the greedy answer, cut exactly where its first stop
	// string begins.
	c := cases[0]
	base := e.generate(ctx, r, "completions without stop", c)
	if !base.ok {
		return
	}
	full := base.texts[0]
	s1, s2 := stopString(full, 0.5), stopString(full, 0.75)
	if len(full) < 8 || s1 == "" || s2 == "" {
		r.cannot(fmt.Sprintf("the answer without stop (%q) is too short to choose a stop string from", full))
		return
	}
	for _, stops := range [][]string{{s1}, {s2, s1}} {
		cut := len(full)
		for _, s := range stops {
			cut = min(cut, strings.Index(full, s))
		}
		want := fmt.Sprintf("text %q (the answer without stop, cut before %q), finish_reason \"stop\"", full[:cut], full[cut:min(cut+5, len(full))])
		body := clone(c.body)
		body["stop"] = stops
		check := fmt.Sprintf("completions stop %q", stops)
		if g := e.generate(ctx, r, check, apiCase{c.name, c.path, body}); g.ok {
			r.check(g.texts[0] == full[:cut] && g.finish[0] == "stop", spectest.Evidence{Check: check, Request: compact(body), Expected: want,
				Got: fmt.Sprintf("text %q, finish_reason %q", g.texts[0], g.finish[0])})
		}
		st := e.stream(ctx, c.path, clone(body))
		r.sent(st.err != nil)
		r.check(st.err == nil && st.text == full[:cut] && st.finish == "stop", spectest.Evidence{Check: check + " streamed", Request: compact(body), Expected: want, Got: st.describe()})
	}
	// Chat: a reasoning parser may reshape the text, so the check is that
	// the stop string never comes back and the answer says it stopped.
	c = cases[1]
	base = e.generate(ctx, r, "chat without stop", c)
	if !base.ok {
		return
	}
	s := stopString(base.texts[0], 0.5)
	if s == "" {
		r.cannot(fmt.Sprintf("the chat answer without stop (%q) is too short to choose a stop string from", base.texts[0]))
		return
	}
	body := clone(c.body)
	body["stop"] = []string{s}
	want := fmt.Sprintf("no %q in the answer (without stop it came at byte %d), finish_reason \"stop\"", s, strings.Index(base.texts[0], s))
	check := fmt.Sprintf("chat stop [%q]", s)
	if g := e.generate(ctx, r, check, apiCase{c.name, c.path, body}); g.ok {
		r.check(!strings.Contains(g.texts[0], s) && g.finish[0] == "stop", spectest.Evidence{Check: check, Request: compact(body), Expected: want,
			Got: fmt.Sprintf("text %q, finish_reason %q", g.texts[0], g.finish[0])})
	}
	st := e.stream(ctx, c.path, clone(body))
	r.sent(st.err != nil)
	r.check(st.err == nil && !strings.Contains(st.text, s) && st.finish == "stop", spectest.Evidence{Check: check + " streamed", Request: compact(body), Expected: want, Got: st.describe()})
}

func nChoices(ctx context.Context, e *env, t spectest.Test, r *rec) {
	m := first(t.Params.MaxTokens, 16)
	for _, n := range orDefault(t.Params.N, []int{2, 3}) {
		for _, c := range e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0.8, "seed": 5, "n": n}) {
			check := fmt.Sprintf("%s n %d", c.name, n)
			g := e.generate(ctx, r, check, c)
			if !g.ok {
				continue
			}
			idx := slices.Clone(g.indexes)
			slices.Sort(idx)
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			r.check(slices.Equal(idx, want), spectest.Evidence{Check: check, Request: compact(c.body),
				Expected: fmt.Sprintf("%d choices, indexes %v", n, want), Got: fmt.Sprintf("%d choices, indexes %v", len(g.indexes), g.indexes)})
		}
	}
}

func seed(ctx context.Context, e *env, t spectest.Test, r *rec) {
	seeds := t.Params.Seeds
	if len(seeds) < 2 {
		seeds = []int64{42, 7, 1234, 99}
	}
	temp := 0.9
	if t.Params.Temperature != nil {
		temp = *t.Params.Temperature
	}
	m := first(t.Params.MaxTokens, 32)
	c := e.both(colorPrompt, map[string]any{"max_tokens": m, "temperature": temp})[0]
	with := func(s int64) apiCase {
		b := clone(c.body)
		b["seed"] = s
		return apiCase{c.name, c.path, b}
	}
	// The same seed twice, one after the other.
	a := e.generate(ctx, r, fmt.Sprintf("seed %d", seeds[0]), with(seeds[0]))
	b := e.generate(ctx, r, fmt.Sprintf("seed %d again", seeds[0]), with(seeds[0]))
	if a.ok && b.ok {
		r.check(a.texts[0] == b.texts[0], spectest.Evidence{Check: fmt.Sprintf("seed %d twice", seeds[0]), Request: compact(with(seeds[0]).body),
			Expected: fmt.Sprintf("the same text twice: %q", a.texts[0]), Got: fmt.Sprintf("%q", b.texts[0])})
	}
	// Different seeds sample differently.
	distinct := map[string]bool{}
	var got []string
	for _, s := range seeds {
		if g := e.generate(ctx, r, fmt.Sprintf("seed %d", s), with(s)); g.ok {
			distinct[g.texts[0]] = true
			got = append(got, fmt.Sprintf("seed %d: %q", s, g.texts[0]))
		}
	}
	if len(got) == len(seeds) {
		r.check(len(distinct) > 1, spectest.Evidence{Check: fmt.Sprintf("seeds %v", seeds), Request: compact(c.body),
			Expected: "different texts for different seeds at temperature " + fmt.Sprint(temp), Got: strings.Join(got, "; ")})
	}
	// Concurrent requests with seed 0 among others with their own seeds
	// agree with each other (upstream's non-uniform seeding).
	n := max(t.Params.Concurrency, 2)
	texts := make([]string, n)
	oks := make([]bool, n)
	parallel(n, func(i int) {
		s := int64(0)
		if i%2 == 1 {
			s = seeds[(i/2)%len(seeds)]
		}
		g := e.generate(ctx, r, fmt.Sprintf("concurrent request %d (seed %d)", i, s), with(s))
		if g.ok {
			texts[i], oks[i] = g.texts[0], true
		}
	})
	zero := map[string]int{}
	for i := 0; i < n; i += 2 {
		if !oks[i] {
			return
		}
		zero[texts[i]]++
	}
	var seen []string
	for s, k := range zero {
		seen = append(seen, fmt.Sprintf("%d× %q", k, s))
	}
	sort.Strings(seen)
	r.check(len(zero) == 1, spectest.Evidence{Check: fmt.Sprintf("%d concurrent requests, every other one with seed 0", n), Request: compact(with(0).body),
		Expected: "one text for every seed-0 request", Got: strings.Join(seen, "; ")})
}

func logprobs(ctx context.Context, e *env, t spectest.Test, r *rec) {
	k := t.Params.TopLogprobs
	if k < 1 {
		k = 3
	}
	m := first(t.Params.MaxTokens, 12)
	const eps = 1e-3
	cases := e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0})
	comp := cases[0]
	comp.body["logprobs"] = k
	if g := e.generate(ctx, r, "completions logprobs", comp); g.ok {
		lp, u := g.comp.Choices[0].Logprobs, g.usage
		var problems []string
		switch {
		case lp == nil:
			problems = append(problems, "no logprobs")
		case u == nil:
			problems = append(problems, "no usage")
		default:
			n := u.CompletionTokens
			if len(lp.Tokens) != n || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n {
				problems = append(problems, fmt.Sprintf("%d tokens, %d token_logprobs, %d top_logprobs for %d completion tokens", len(lp.Tokens), len(lp.TokenLogprobs), len(lp.TopLogprobs), n))
			}
			for i := range min(len(lp.TokenLogprobs), len(lp.TopLogprobs)) {
				v := lp.TokenLogprobs[i]
				if v == nil || *v > eps || math.IsNaN(*v) || math.IsInf(*v, 0) {
					problems = append(problems, fmt.Sprintf("token %d: logprob %v", i, deref(v)))
					continue
				}
				top := lp.TopLogprobs[i]
				if len(top) < 1 || len(top) > k+1 {
					problems = append(problems, fmt.Sprintf("token %d: %d top_logprobs for logprobs %d", i, len(top), k))
				}
				for tok, alt := range top {
					if alt > *v+eps {
						problems = append(problems, fmt.Sprintf("token %d: %q (%.4f) is likelier than the chosen %q (%.4f) at temperature 0", i, tok, alt, lp.Tokens[i], *v))
					}
				}
			}
		}
		r.check(len(problems) == 0, spectest.Evidence{Check: "completions logprobs", Request: compact(comp.body),
			Expected: fmt.Sprintf("one logprob ≤ 0 per completion token, up to %d alternatives each, none likelier than the chosen token", k+1),
			Got:      gotOr(problems, fmt.Sprintf("%d tokens: %s", len(lp.Tokens), compact(lp.TokenLogprobs)))})
	}
	chat := cases[1]
	chat.body["logprobs"], chat.body["top_logprobs"] = true, k
	if g := e.generate(ctx, r, "chat logprobs", chat); g.ok {
		ch := g.chat.Choices[0]
		var problems []string
		switch {
		case ch.Logprobs == nil || len(ch.Logprobs.Content) == 0:
			problems = append(problems, "no logprobs.content")
		case g.usage == nil:
			problems = append(problems, "no usage")
		default:
			// A reasoning parser may keep its tokens out of content;
			// there are never more entries than tokens.
			if n := len(ch.Logprobs.Content); n > g.usage.CompletionTokens {
				problems = append(problems, fmt.Sprintf("%d logprobs entries for %d completion tokens", n, g.usage.CompletionTokens))
			}
			for i, c := range ch.Logprobs.Content {
				if c.Logprob > eps || math.IsNaN(c.Logprob) {
					problems = append(problems, fmt.Sprintf("entry %d: logprob %v", i, c.Logprob))
				}
				if len(c.TopLogprobs) != k {
					problems = append(problems, fmt.Sprintf("entry %d: %d top_logprobs, asked for %d", i, len(c.TopLogprobs), k))
					continue
				}
				for j := 1; j < len(c.TopLogprobs); j++ {
					if c.TopLogprobs[j].Logprob > c.TopLogprobs[j-1].Logprob+eps {
						problems = append(problems, fmt.Sprintf("entry %d: top_logprobs not sorted", i))
						break
					}
				}
				if c.TopLogprobs[0].Logprob > c.Logprob+eps {
					problems = append(problems, fmt.Sprintf("entry %d: %q (%.4f) is likelier than the chosen %q (%.4f) at temperature 0", i, c.TopLogprobs[0].Token, c.TopLogprobs[0].Logprob, c.Token, c.Logprob))
				}
			}
		}
		r.check(len(problems) == 0, spectest.Evidence{Check: "chat logprobs", Request: compact(chat.body),
			Expected: fmt.Sprintf("an entry ≤ 0 per token with exactly %d top_logprobs sorted by probability, the chosen token the likeliest", k),
			Got:      gotOr(problems, spectest.Truncate(compact(ch.Logprobs), 300))})
	}
}

func temperature0(ctx context.Context, e *env, t spectest.Test, r *rec) {
	n := max(t.Params.Repeats, 2)
	m := first(t.Params.MaxTokens, 32)
	for _, c := range e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0}) {
		var texts []string
		for i := range n {
			if g := e.generate(ctx, r, fmt.Sprintf("%s temperature 0, request %d", c.name, i+1), c); g.ok {
				texts = append(texts, g.texts[0])
			}
		}
		if len(texts) < n {
			continue
		}
		same := true
		for _, s := range texts[1:] {
			same = same && s == texts[0]
		}
		r.check(same, spectest.Evidence{Check: fmt.Sprintf("%s temperature 0, %d times", c.name, n), Request: compact(c.body),
			Expected: fmt.Sprintf("the same text %d times: %q", n, texts[0]), Got: compact(texts)})
	}
}

// tokenID is a token of the served model, from its tokenizer, for prompts
// given as token ids (whose length is then exact).
func (e *env) tokenID(ctx context.Context) (int, error) {
	ids, err := e.cfg.Client.Tokenizer(e.cfg.Model).Tokenize(ctx, " hello", false)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("the tokenizer gave no token for \" hello\"")
	}
	return ids[len(ids)-1], nil
}

func repeatID(id, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = id
	}
	return out
}

func contextLength(ctx context.Context, e *env, t spectest.Test, r *rec) {
	limit := t.Params.MaxContext
	id, err := e.tokenID(ctx)
	if err != nil {
		r.cannot("prompts of an exact length need the server's tokenizer: " + err.Error())
		return
	}
	mentions := func(a answer) bool {
		m := strings.ToLower(a.message())
		return strings.Contains(m, "context") || strings.Contains(m, "token") || strings.Contains(m, "length")
	}
	refuse := func(check string, body map[string]any, why string) {
		a := e.post(ctx, openai.Completions.Path(), body)
		ok := a.refused() && mentions(a)
		r.sent(!ok)
		r.check(ok, spectest.Evidence{Check: check, Request: compact(body),
			Expected: "a 4xx refusal that says the request is over the context length (" + why + ")", Got: a.describe()})
	}
	refuse(fmt.Sprintf("8 prompt tokens, max_tokens %d", limit),
		map[string]any{"model": e.cfg.Model, "prompt": repeatID(id, 8), "max_tokens": limit},
		fmt.Sprintf("8 + %d > %d", limit, limit))
	refuse(fmt.Sprintf("%d prompt tokens, max_tokens 1", limit+1),
		map[string]any{"model": e.cfg.Model, "prompt": repeatID(id, limit+1), "max_tokens": 1},
		fmt.Sprintf("the prompt alone is %d > %d", limit+1, limit))
	// Refusing is not failing: the server goes on serving.
	c := apiCase{"completions", openai.Completions.Path(), map[string]any{"model": e.cfg.Model, "prompt": countPrompt, "max_tokens": 4, "temperature": 0}}
	if g := e.generate(ctx, r, "a request after the refusals", c); g.ok {
		r.check(true, spectest.Evidence{Check: "a request after the refusals", Request: compact(c.body), Expected: "HTTP 200", Got: fmt.Sprintf("text %q", g.texts[0])})
	}
}

func contextFull(ctx context.Context, e *env, t spectest.Test, r *rec) {
	limit := t.Params.MaxContext
	m := first(t.Params.MaxTokens, 4)
	if limit <= m {
		r.cannot(fmt.Sprintf("max_context %d leaves no room for a prompt and %d tokens", limit, m))
		return
	}
	id, err := e.tokenID(ctx)
	if err != nil {
		r.cannot("prompts of an exact length need the server's tokenizer: " + err.Error())
		return
	}
	body := map[string]any{"model": e.cfg.Model, "prompt": repeatID(id, limit-m), "max_tokens": m, "temperature": 0}
	check := fmt.Sprintf("%d prompt tokens and max_tokens %d (= max_context %d)", limit-m, m, limit)
	g := e.generate(ctx, r, check, apiCase{"completions", openai.Completions.Path(), body})
	if !g.ok {
		return
	}
	got := "no usage"
	ok := false
	if u := g.usage; u != nil {
		ok = u.PromptTokens == limit-m && u.CompletionTokens >= 1 && u.CompletionTokens <= m
		got = fmt.Sprintf("prompt_tokens %d, completion_tokens %d, text %q", u.PromptTokens, u.CompletionTokens, g.texts[0])
	}
	r.check(ok, spectest.Evidence{Check: check, Request: compact(body), Expected: fmt.Sprintf("served: prompt_tokens %d, 1 to %d completion tokens", limit-m, m), Got: got})
}

func concurrency(ctx context.Context, e *env, t spectest.Test, r *rec) {
	n := max(t.Params.MaxConcurrency, 1)
	m := first(t.Params.MaxTokens, 16)
	c := e.both(storyPrompt, map[string]any{"max_tokens": m, "temperature": 0})[1]
	var ok, failed atomic.Int32
	parallel(n, func(i int) {
		if g := e.generate(ctx, r, fmt.Sprintf("request %d of %d at once", i+1, n), c); g.ok {
			ok.Add(1)
		} else {
			failed.Add(1)
		}
	})
	r.check(failed.Load() == 0, spectest.Evidence{Check: fmt.Sprintf("%d requests at once (max_concurrency)", n), Request: compact(c.body),
		Expected: fmt.Sprintf("%d answers, none refused or failed", n), Got: fmt.Sprintf("%d answered, %d failed", ok.Load(), failed.Load())})
	r.say("%d requests at once", n)
}

// personSchema is the structured-output test's schema.
var personSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name": map[string]any{"type": "string"},
		"age":  map[string]any{"type": "integer"},
	},
	"required":             []string{"name", "age"},
	"additionalProperties": false,
}

func structuredOutputs(ctx context.Context, e *env, t spectest.Test, r *rec) {
	m := first(t.Params.MaxTokens, 160)
	c := e.both("Describe a fictional person as JSON with a name and an age.", map[string]any{"max_tokens": m, "temperature": 0})[1]
	schema := clone(c.body)
	schema["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": personSchema, "strict": true}}
	if g := e.generate(ctx, r, "response_format json_schema", apiCase{c.name, c.path, schema}); g.ok {
		content := contentOf(g.chat)
		var v map[string]any
		problems := []string{}
		if err := json.Unmarshal([]byte(content), &v); err != nil {
			problems = append(problems, "not a JSON object: "+err.Error())
		} else {
			if _, ok := v["name"].(string); !ok {
				problems = append(problems, "name is not a string")
			}
			if f, ok := v["age"].(float64); !ok || f != math.Trunc(f) {
				problems = append(problems, "age is not an integer")
			}
			for k := range v {
				if k != "name" && k != "age" {
					problems = append(problems, "extra property "+k)
				}
			}
		}
		r.check(len(problems) == 0, spectest.Evidence{Check: "response_format json_schema", Request: compact(schema),
			Expected: `a JSON object with a string "name" and an integer "age", nothing else`, Got: gotOr(problems, "content "+content)})
	}
	obj := clone(c.body)
	obj["response_format"] = map[string]any{"type": "json_object"}
	if g := e.generate(ctx, r, "response_format json_object", apiCase{c.name, c.path, obj}); g.ok {
		content := contentOf(g.chat)
		var v map[string]any
		err := json.Unmarshal([]byte(content), &v)
		r.check(err == nil, spectest.Evidence{Check: "response_format json_object", Request: compact(obj), Expected: "a JSON object", Got: "content " + content})
	}
}

// weatherTool is the tool-call test's tool.
var weatherTool = map[string]any{
	"type": "function",
	"function": map[string]any{
		"name":        "get_weather",
		"description": "Get the current weather in a city.",
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			},
			"required": []string{"city", "unit"},
		},
	},
}

func toolCalls(ctx context.Context, e *env, t spectest.Test, r *rec) {
	m := first(t.Params.MaxTokens, 160)
	c := e.both("What is the weather like in Paris today?", map[string]any{"max_tokens": m, "temperature": 0,
		"tools": []any{weatherTool}, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}})[1]
	g := e.generate(ctx, r, "named tool_choice", c)
	if !g.ok {
		return
	}
	calls := g.chat.Choices[0].Message.ToolCalls
	var problems []string
	if len(calls) == 0 {
		problems = append(problems, "no tool_calls")
	} else {
		tc := calls[0]
		if tc.Function.Name != "get_weather" {
			problems = append(problems, fmt.Sprintf("called %q", tc.Function.Name))
		}
		if tc.Type != "" && tc.Type != "function" {
			problems = append(problems, fmt.Sprintf("type %q", tc.Type))
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
			problems = append(problems, "arguments are not a JSON object: "+err.Error())
		} else {
			if _, ok := args["city"].(string); !ok {
				problems = append(problems, "no string city")
			}
			if u, _ := args["unit"].(string); u != "celsius" && u != "fahrenheit" {
				problems = append(problems, fmt.Sprintf("unit %q is not celsius or fahrenheit", u))
			}
		}
	}
	// Call ids are random: the evidence shows the calls without them.
	var shown []string
	for _, tc := range calls {
		shown = append(shown, tc.Function.Name+"("+tc.Function.Arguments+")")
	}
	r.check(len(problems) == 0, spectest.Evidence{Check: "named tool_choice get_weather", Request: compact(c.body),
		Expected: `a call of get_weather with arguments {"city": string, "unit": "celsius" or "fahrenheit"}`, Got: gotOr(problems, "tool_calls "+strings.Join(shown, ", "))})
}

func contentOf(c *chatAnswer) string {
	if c == nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return ""
	}
	return *c.Choices[0].Message.Content
}

func gotOr(problems []string, fine string) string {
	if len(problems) == 0 {
		return fine
	}
	if len(problems) > 4 {
		problems = append(problems[:4], fmt.Sprintf("and %d more", len(problems)-4))
	}
	return strings.Join(problems, "; ")
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func first(v []int, def int) int {
	if len(v) > 0 {
		return v[0]
	}
	return def
}

func orDefault(v, def []int) []int {
	if len(v) > 0 {
		return v
	}
	return def
}
