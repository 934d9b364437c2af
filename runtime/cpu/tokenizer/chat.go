package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Family names a built-in chat format, used when a GGUF has no
// tokenizer.chat_template or its template cannot be parsed.
type Family string

// Built-in chat formats.
const (
	FamilyLlama2  Family = "llama2"  // <s>[INST] <<SYS>>...<</SYS>> user [/INST] answer </s>
	FamilyLlama3  Family = "llama3"  // <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
	FamilyChatML  Family = "chatml"  // <|im_start|>role\ncontent<|im_end|>\n (Qwen 2/3)
	FamilyMistral Family = "mistral" // <s>[INST] user [/INST]answer</s>
)

// chatTemplate renders conversations: with the GGUF's Jinja template when
// it parsed, otherwise with the family's built-in format.
type chatTemplate struct {
	source     string
	tmpl       *exec.Template
	parseErr   error
	family     Family
	bos, eos   string
	newContext func() *exec.Context
	now        func() time.Time
	// order remembers the key order of JSON objects handed to the
	// template (tools, tool-call arguments) for its tojson (tools.go).
	order *keyOrder
}

// ChatTemplate describes what ChatPrompt renders with.
type ChatTemplate struct {
	// Source is tokenizer.chat_template ("" when absent).
	Source string
	// Family is the built-in format used when Source is empty or failed to
	// parse; ParseError says why it failed.
	Family     Family
	ParseError error
	// Builtin is true when ChatPrompt uses the family's built-in format.
	Builtin bool
}

// ChatTemplate reports which template ChatPrompt uses.
func (t *Tokenizer) ChatTemplate() ChatTemplate {
	c := t.chat
	return ChatTemplate{Source: c.source, Family: c.family, ParseError: c.parseErr, Builtin: c.tmpl == nil}
}

func (t *Tokenizer) initChat(f *gguf.File, now func() time.Time) error {
	c := &chatTemplate{family: t.guessFamily(f.Architecture()), now: now, order: &keyOrder{}}
	if t.bos >= 0 {
		c.bos = t.tokens[t.bos]
	}
	if t.eos >= 0 {
		c.eos = t.tokens[t.eos]
	}
	if v, present := f.Value("tokenizer.chat_template"); present {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("tokenizer.chat_template holds %T, want string", v)
		}
		c.source = s
	}
	if c.source != "" {
		c.tmpl, c.newContext, c.parseErr = compileTemplate(c.source, c.order)
	}
	t.chat = c
	return nil
}

// guessFamily picks the built-in format from the vocabulary's chat markers,
// then the architecture, then the tokenizer model.
func (t *Tokenizer) guessFamily(arch string) Family {
	has := func(s string) bool { _, ok := t.index[s]; return ok }
	switch {
	case has("<|start_header_id|>") && has("<|eot_id|>"):
		return FamilyLlama3
	case has("<|im_start|>") && has("<|im_end|>"):
		return FamilyChatML
	case arch == "qwen2" || arch == "qwen3" || arch == "qwen2moe" || arch == "qwen3moe":
		return FamilyChatML
	case has("[INST]") && t.types[t.index["[INST]"]] == TypeControl:
		return FamilyMistral
	case t.model == ModelSPM:
		return FamilyLlama2
	}
	return FamilyChatML
}

// compileTemplate parses a Hugging Face chat template with the settings
// transformers uses (trim_blocks, lstrip_blocks) and an environment holding
// the Jinja built-ins, tojson replaced by transformers' (see keyOrder);
// ChatPrompt adds raise_exception per rendering.
func compileTemplate(source string, order *keyOrder) (*exec.Template, func() *exec.Context, error) {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	cfg.KeepTrailingNewline = false
	const name = "/chat_template" // the memory loader wants absolute names
	loader, err := loaders.NewMemoryLoader(map[string]string{name: joinContinuedLines(source)})
	if err != nil {
		return nil, nil, fmt.Errorf("chat template: %w", err)
	}
	newContext := func() *exec.Context {
		ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
		// The library's range feeds a channel from a goroutine that leaks
		// when a loop ends early; this one builds a bounded list instead.
		ctx.Set("range", boundedRange)
		return ctx
	}
	env := &exec.Environment{
		Context:           newContext(),
		Filters:           templateFilters(order),
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           templateMethods(order),
	}
	tmpl, err := parseGuarded(name, cfg, loader, env)
	if err != nil {
		return nil, nil, fmt.Errorf("chat template: %w", err)
	}
	return tmpl, newContext, nil
}

// pythonStrMethods are the names of Python's str methods; the ones the
// template library implements are carried over into templateMethods.
var pythonStrMethods = strings.Fields(`capitalize casefold center count encode endswith expandtabs
find format index isalnum isalpha isascii isdecimal isdigit isidentifier islower isnumeric
isprintable isspace istitle isupper join ljust lower lstrip partition removeprefix removesuffix
replace rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip swapcase
title translate upper zfill`)

// templateMethods is the library's method table with str.replace fixed
// (the library requires its count argument, which Python and chat
// templates leave out) and the dict methods of keyOrder.
func templateMethods(order *keyOrder) exec.Methods {
	m := builtins.Methods
	m.Dict = order.dictMethods(m.Dict)
	str := map[string]exec.Method[string]{}
	for _, name := range pythonStrMethods {
		if fn, ok := m.Str.Get(name); ok {
			str[name] = fn
		}
	}
	str["replace"] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		var old, repl string
		var count int
		if err := args.Take(
			exec.PositionalArgument("old", nil, exec.StringArgument(&old)),
			exec.PositionalArgument("new", nil, exec.StringArgument(&repl)),
			exec.PositionalArgument("count", exec.AsValue(-1), exec.IntArgument(&count)),
		); err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		return strings.Replace(self, old, repl, count), nil
	}
	m.Str = exec.NewMethodSet(str)
	return m
}

// joinContinuedLines removes backslash-newline pairs inside string literals
// of template tags. Jinja decodes literals like Python, where such a pair
// continues the line; the template library would keep the backslash.
// Mistral's templates write their long default system prompts this way.
func joinContinuedLines(src string) string {
	if !strings.Contains(src, "\\\n") {
		return src
	}
	var sb strings.Builder
	sb.Grow(len(src))
	inTag := false
	var quote byte // the open string literal's quote inside a tag, or 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case !inTag:
			if c == '{' && i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '%') {
				inTag = true
				sb.WriteByte(c)
				i++
				c = src[i]
			}
		case quote != 0:
			if c == '\\' && i+1 < len(src) {
				if src[i+1] == '\n' {
					i++
					continue
				}
				sb.WriteByte(c)
				i++
				c = src[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case (c == '}' || c == '%') && i+1 < len(src) && src[i+1] == '}':
			inTag = false
			sb.WriteByte(c)
			i++
			c = src[i]
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// parseGuarded turns a panic inside the template library into an error:
// GGUF templates are untrusted input.
func parseGuarded(name string, cfg *config.Config, loader loaders.Loader, env *exec.Environment) (tmpl *exec.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("template library panicked: %v", r)
		}
	}()
	return exec.NewTemplate(name, cfg, loader, env)
}

// TemplateError is raised by a chat template's raise_exception call: the
// conversation does not suit the model (roles not alternating, say).
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "chat template: " + e.Message }

// ChatPrompt renders messages with the model's chat template, ending with
// the assistant turn's opening when addGenerationPrompt.
func (t *Tokenizer) ChatPrompt(messages []runtime.ChatMessage, addGenerationPrompt bool) (string, error) {
	c := t.chat
	if c.tmpl == nil {
		return renderBuiltin(c.family, messages, addGenerationPrompt, c.bos, c.eos)
	}
	msgs := make([]map[string]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	return c.execute(msgs, nil, addGenerationPrompt)
}

// execute renders the Jinja template; tools, when not nil, is set as the
// template's tools variable.
func (c *chatTemplate) execute(msgs []map[string]any, tools []any, addGenerationPrompt bool) (string, error) {
	ctx := c.newContext()
	// The template library flattens errors from functions into strings, so
	// the raised exception is kept aside to be returned as it was raised.
	var raised *TemplateError
	ctx.Set("raise_exception", func(msg string) (string, error) {
		raised = &TemplateError{Message: msg}
		return "", raised
	})
	ctx.Set("strftime_now", func(format string) string { return strftime(c.now(), format) })
	ctx.Set("messages", msgs)
	if tools != nil {
		ctx.Set("tools", tools)
	}
	ctx.Set("add_generation_prompt", addGenerationPrompt)
	ctx.Set("bos_token", c.bos)
	ctx.Set("eos_token", c.eos)
	out, err := executeGuarded(c.tmpl, ctx)
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// maxPromptBytes bounds a rendered prompt: far more than any context
// window holds, small enough that a runaway template cannot exhaust memory.
const maxPromptBytes = 4 << 20

// maxRange bounds range() in templates.
const maxRange = 1 << 16

func executeGuarded(tmpl *exec.Template, ctx *exec.Context) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("template library panicked: %v", r)
		}
	}()
	w := &limitedBuilder{limit: maxPromptBytes}
	if err := tmpl.Execute(w, ctx); err != nil {
		return "", err
	}
	return w.String(), nil
}

// limitedBuilder collects output and refuses to grow past limit.
type limitedBuilder struct {
	sb    strings.Builder
	limit int
}

func (b *limitedBuilder) Write(p []byte) (int, error) { return b.WriteString(string(p)) }

// WriteString is what the template library calls (through io.WriteString).
func (b *limitedBuilder) WriteString(s string) (int, error) {
	if b.sb.Len()+len(s) > b.limit {
		return 0, fmt.Errorf("rendered prompt exceeds %d bytes", b.limit)
	}
	return b.sb.WriteString(s)
}

func (b *limitedBuilder) String() string { return b.sb.String() }

// boundedRange is Python's range(stop) / range(start, stop[, step]) as a
// list of at most maxRange numbers.
func boundedRange(_ *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	var ints []int
	for _, a := range params.Args {
		if !a.IsInteger() {
			return nil, fmt.Errorf("range: argument %s is not an integer", a.String())
		}
		ints = append(ints, a.Integer())
	}
	start, stop, step := 0, 0, 1
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, fmt.Errorf("range: want 1 to 3 integer arguments, got %d", len(params.Args))
	}
	if step == 0 {
		return nil, errors.New("range: step must not be zero")
	}
	var out []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) == maxRange {
			return nil, fmt.Errorf("range: more than %d numbers", maxRange)
		}
		out = append(out, i)
	}
	return out, nil
}

// renderBuiltin renders the built-in format of a family.
func renderBuiltin(family Family, messages []runtime.ChatMessage, addGenerationPrompt bool, bos, eos string) (string, error) {
	var sb strings.Builder
	switch family {
	case FamilyChatML:
		for _, m := range messages {
			fmt.Fprintf(&sb, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
		}
		if addGenerationPrompt {
			sb.WriteString("<|im_start|>assistant\n")
		}
	case FamilyLlama3:
		sb.WriteString(bos)
		for _, m := range messages {
			fmt.Fprintf(&sb, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", m.Role, strings.TrimSpace(m.Content))
		}
		if addGenerationPrompt {
			sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case FamilyLlama2, FamilyMistral:
		system, turns, err := alternatingTurns(messages)
		if err != nil {
			return "", err
		}
		for i, m := range turns {
			if m.Role == "assistant" {
				if family == FamilyLlama2 {
					fmt.Fprintf(&sb, " %s %s", strings.TrimSpace(m.Content), eos)
				} else {
					fmt.Fprintf(&sb, "%s%s", strings.TrimSpace(m.Content), eos)
				}
				continue
			}
			content := strings.TrimSpace(m.Content)
			if i == 0 && system != "" {
				if family == FamilyLlama2 {
					content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content
				} else {
					content = system + "\n\n" + content
				}
			}
			if family == FamilyLlama2 || i == 0 {
				sb.WriteString(bos)
			}
			fmt.Fprintf(&sb, "[INST] %s [/INST]", content)
		}
		// The [INST] format opens the assistant turn by closing the user's,
		// so there is nothing to add for the generation prompt.
	default:
		return "", fmt.Errorf("unknown chat format %q", family)
	}
	return sb.String(), nil
}

// alternatingTurns checks the [INST] formats' conversation shape: an
// optional leading system message, then user and assistant alternating,
// starting with user.
func alternatingTurns(messages []runtime.ChatMessage) (string, []runtime.ChatMessage, error) {
	system := ""
	if len(messages) > 0 && messages[0].Role == "system" {
		system = strings.TrimSpace(messages[0].Content)
		messages = messages[1:]
	}
	for i, m := range messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return "", nil, &TemplateError{Message: fmt.Sprintf("message %d has role %q: conversation roles must alternate user/assistant/user/assistant/...", i, m.Role)}
		}
	}
	return system, messages, nil
}

// strftime formats t with C strftime directives, as Python's
// datetime.strftime does for the ones chat templates use; an unknown
// directive is kept as written.
func strftime(t time.Time, format string) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			sb.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&sb, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&sb, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'p':
			sb.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'b':
			sb.WriteString(t.Format("Jan"))
		case 'B':
			sb.WriteString(t.Format("January"))
		case 'a':
			sb.WriteString(t.Format("Mon"))
		case 'A':
			sb.WriteString(t.Format("Monday"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}
