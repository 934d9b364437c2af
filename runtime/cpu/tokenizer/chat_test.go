package tokenizer

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Real-world chat templates as they appear in tokenizer.chat_template of
// published GGUF files (Hugging Face tokenizer_config.json), typed in.
const (
	chatMLTemplate = `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful assistant.<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %}`

	llama3Template = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`

	llama2Template = `{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`

	// A multi-line template relying on trim_blocks/lstrip_blocks and
	// whitespace control, in the style of Qwen2.5's.
	multilineTemplate = `{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are Qwen.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) or message.role == "assistant" %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`
)

var conversation = []runtime.ChatMessage{
	{Role: "system", Content: "Be brief."},
	{Role: "user", Content: "Hi there "},
	{Role: "assistant", Content: "Hello!"},
	{Role: "user", Content: "Tell me a story."},
}

func withTemplate(t *testing.T, base []gguf.KV, template string) *Tokenizer {
	t.Helper()
	kv := append(append([]gguf.KV(nil), base...), gguf.KV{Key: "tokenizer.chat_template", Value: template})
	tk, err := New(parseKV(t, kv))
	if err != nil {
		t.Fatal(err)
	}
	if ct := tk.ChatTemplate(); ct.Builtin || ct.ParseError != nil {
		t.Fatalf("template not used (builtin %v): %v", ct.Builtin, ct.ParseError)
	}
	return tk
}

func TestChatTemplates(t *testing.T) {
	cases := []struct {
		name      string
		base      []gguf.KV
		template  string
		messages  []runtime.ChatMessage
		genPrompt bool
		want      string
	}{
		{
			name: "chatml", base: gpt2Vocab("qwen2"), template: chatMLTemplate,
			messages: conversation[1:], genPrompt: true,
			want: "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" +
				"<|im_start|>user\nHi there <|im_end|>\n" +
				"<|im_start|>assistant\nHello!<|im_end|>\n" +
				"<|im_start|>user\nTell me a story.<|im_end|>\n" +
				"<|im_start|>assistant\n",
		},
		{
			name: "chatml with system, no generation prompt", base: gpt2Vocab("qwen2"), template: chatMLTemplate,
			messages: conversation[:2],
			want:     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n",
		},
		{
			name: "llama3", base: llama3Vocab(), template: llama3Template,
			messages: conversation, genPrompt: true,
			want: "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nTell me a story.<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n",
		},
		{
			name: "llama2", base: spmVocab(), template: llama2Template,
			messages: conversation, genPrompt: true,
			want: "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello! </s><s>[INST] Tell me a story. [/INST]",
		},
		{
			name: "multi-line", base: gpt2Vocab("qwen2"), template: multilineTemplate,
			messages: conversation[1:2], genPrompt: true,
			want: "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n<|im_start|>assistant\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := withTemplate(t, c.base, c.template)
			got, err := tk.ChatPrompt(c.messages, c.genPrompt)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestChatTemplateRaise(t *testing.T) {
	tk := withTemplate(t, spmVocab(), llama2Template)
	_, err := tk.ChatPrompt([]runtime.ChatMessage{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, true)
	var te *TemplateError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "must alternate") {
		t.Fatalf("error %v, want the template's exception", err)
	}
}

// llama3Vocab is a byte-level vocabulary with Llama 3's chat markers.
func llama3Vocab() []gguf.KV {
	kv := gpt2Vocab("llama-bpe")
	for i := range kv {
		switch kv[i].Key {
		case "tokenizer.ggml.tokens":
			kv[i].Value = append(kv[i].Value.([]string), "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
		case "tokenizer.ggml.token_type":
			kv[i].Value = append(kv[i].Value.([]int32), 3, 3, 3, 3)
		case "general.architecture":
			kv[i].Value = "llama"
		}
	}
	// No add_bos_token: the llama-bpe pre-tokenizer implies it.
	return append(kv, gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: uint32(266)})
}

func TestBuiltinFormats(t *testing.T) {
	cases := []struct {
		name   string
		base   []gguf.KV
		family Family
		want   string
	}{
		{"llama2", spmVocab(), FamilyLlama2,
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello! </s><s>[INST] Tell me a story. [/INST]"},
		{"chatml", gpt2Vocab("qwen2"), FamilyChatML,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n" +
				"<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", llama3Vocab(), FamilyLlama3,
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nTell me a story.<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"mistral", mistralVocab(), FamilyMistral,
			"<s>[INST] Be brief.\n\nHi there [/INST]Hello!</s>[INST] Tell me a story. [/INST]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := New(parseKV(t, c.base))
			if err != nil {
				t.Fatal(err)
			}
			if ct := tk.ChatTemplate(); !ct.Builtin || ct.Family != c.family {
				t.Fatalf("template %+v, want built-in %s", ct, c.family)
			}
			got, err := tk.ChatPrompt(conversation, true)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func mistralVocab() []gguf.KV {
	kv := spmVocab()
	for i := range kv {
		switch kv[i].Key {
		case "tokenizer.ggml.tokens":
			kv[i].Value = append(kv[i].Value.([]string), "[INST]", "[/INST]")
		case "tokenizer.ggml.scores":
			kv[i].Value = append(kv[i].Value.([]float32), 0, 0)
		case "tokenizer.ggml.token_type":
			kv[i].Value = append(kv[i].Value.([]int32), 3, 3)
		}
	}
	return kv
}

func TestBrokenTemplateFallsBack(t *testing.T) {
	kv := append(spmVocab(), gguf.KV{Key: "tokenizer.chat_template", Value: "{% for m in messages %}{{ m.content "})
	tk, err := New(parseKV(t, kv))
	if err != nil {
		t.Fatal(err)
	}
	ct := tk.ChatTemplate()
	if !ct.Builtin || ct.ParseError == nil || ct.Family != FamilyLlama2 {
		t.Fatalf("template %+v, want the llama2 fallback with a parse error", ct)
	}
	got, err := tk.ChatPrompt(conversation[1:2], true)
	if err != nil || got != "<s>[INST] Hi there [/INST]" {
		t.Errorf("fallback rendered %q, %v", got, err)
	}
	if _, err := tk.ChatPrompt([]runtime.ChatMessage{{Role: "assistant", Content: "x"}}, true); err == nil {
		t.Error("an [INST] conversation starting with the assistant was accepted")
	}
}

// A chat prompt carries its own BOS, so it is encoded without adding
// specials (as the server does for chat requests); adding them gives a
// second BOS, as in llama.cpp.
func TestChatPromptEncodesWithoutDoubleBOS(t *testing.T) {
	tk := withTemplate(t, spmVocab(), llama2Template)
	prompt, err := tk.ChatPrompt(conversation[1:2], true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.Encode(prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != 1 || ids[1] == 1 {
		t.Errorf("ids %v: want exactly one BOS", ids[:2])
	}
	ids, err = tk.Encode(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != 1 || ids[1] != 1 || ids[2] == 1 {
		t.Errorf("ids %v with specials added: want two BOS", ids[:3])
	}
}

func TestChatPromptConcurrent(t *testing.T) {
	tk := withTemplate(t, llama3Vocab(), llama3Template)
	want, err := tk.ChatPrompt(conversation, true)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				got, err := tk.ChatPrompt(conversation, true)
				if err == nil && got != want {
					err = errors.New("concurrent rendering differs: " + got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestTemplateLimits(t *testing.T) {
	cases := []struct {
		template string
		want     string // rendered output, or the error's text
		fails    bool
	}{
		{"{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}|{% for i in range(3, 0, -1) %}{{ i }}{% endfor %}", "012|135|321", false},
		{"{% for i in range(100000000) %}{% endfor %}", "more than 65536 numbers", true},
		{"{% for i in range(5000) %}" + strings.Repeat("x", 1000) + "{% endfor %}", "exceeds", true},
		{"{{ range(1, 2, 0) }}", "step must not be zero", true},
	}
	for _, c := range cases {
		tk := withTemplate(t, spmVocab(), c.template)
		got, err := tk.ChatPrompt(conversation, true)
		switch {
		case c.fails && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%.60s: error %v (output %d bytes), want %q", c.template, err, len(got), c.want)
		case !c.fails && (err != nil || got != c.want):
			t.Errorf("%s: got %q, %v, want %q", c.template, got, err, c.want)
		}
	}
}

func TestTemplateStringMethods(t *testing.T) {
	const src = `{% for m in messages %}{{ m.content.replace(' ', '_') }}|{{ m.content.replace('e', 'E', 1) }}|{{ m.content.split(' ')[0] | upper }}|{{ m.content.startswith('Hi') }};{% endfor %}`
	tk := withTemplate(t, spmVocab(), src)
	got, err := tk.ChatPrompt(conversation[:2], false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Be_brief.|BE brief.|BE|False;Hi_there_|Hi thEre |HI|True;"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStrftimeNow(t *testing.T) {
	kv := append(spmVocab(), gguf.KV{Key: "tokenizer.chat_template",
		Value: `{%- set today = strftime_now("%Y-%m-%d") %}{{ today }}|{{ strftime_now("%d %b %Y, %A %B %j %H:%M:%S %I%p %y %% %Q") }}`})
	now := time.Date(2024, time.July, 6, 15, 4, 5, 0, time.UTC)
	tk, err := NewWithOptions(parseKV(t, kv), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tk.ChatPrompt(conversation, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2024-07-06|06 Jul 2024, Saturday July 188 15:04:05 03PM 24 % %Q"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLlama3AddsBOS(t *testing.T) {
	tk, err := New(parseKV(t, llama3Vocab()))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.Encode("hello", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := pieces(tk, ids); !reflect.DeepEqual(got, []string{"<|begin_of_text|>", "hello"}) {
		t.Errorf("Encode = %q, want BOS first", got)
	}
	prompt, _ := tk.ChatPrompt(conversation[1:2], true)
	ids, _ = tk.Encode(prompt, false)
	if ids[0] != 266 || ids[1] != 267 {
		t.Errorf("chat prompt ids start %v, want one BOS then <|start_header_id|>", ids[:2])
	}
}

func TestLineContinuationInLiterals(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{{ \"Paris.\\\nYour\" }}", "Paris.Your"},
		{"{%- set m = 'a\\\n\\\nb' %}{{ m }}", "ab"},
		{"{{ \"say \\\"hi\\\"\\\n!\" }}", "say \"hi\"!"},
		{"text \\\n{{ 'x' }}", "text \\\nx"}, // outside tags the backslash is text
	}
	for _, c := range cases {
		tk := withTemplate(t, spmVocab(), c.src)
		got, err := tk.ChatPrompt(conversation, false)
		if err != nil || got != c.want {
			t.Errorf("%q rendered %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}
