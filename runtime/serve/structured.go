package serve

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/runtime/grammar"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// Structured outputs: the request fields of OpenAI (response_format), vLLM
// (guided_json, guided_regex, guided_choice, guided_grammar, and their newer
// structured_outputs object) and llama.cpp (grammar, json_schema) that
// constrain what the model writes. At most one may be given. The vllm
// runtime forwards them untouched; the cpu and sim engines decode under a
// grammar (see runtime/grammar).

// structuredBody holds those fields; samplingBody embeds it.
type structuredBody struct {
	GuidedJSON              json.RawMessage `json:"guided_json"`
	GuidedRegex             *string         `json:"guided_regex"`
	GuidedChoice            json.RawMessage `json:"guided_choice"`
	GuidedGrammar           *string         `json:"guided_grammar"`
	GuidedDecodingBackend   *string         `json:"guided_decoding_backend"`
	GuidedWhitespacePattern *string         `json:"guided_whitespace_pattern"`
	StructuredOutputs       json.RawMessage `json:"structured_outputs"`
	Grammar                 *string         `json:"grammar"`
	JSONSchema              json.RawMessage `json:"json_schema"`
}

// constraintSpec is a validated request for constrained decoding: the
// grammar's notation, its source, and the request field that gave it.
type constraintSpec struct {
	kind   grammar.Kind
	source string
	param  string
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// parseStructured reads the constraint fields; nil when there is none.
func parseStructured(b *samplingBody) (*constraintSpec, *apiError) {
	var specs []*constraintSpec
	add := func(kind grammar.Kind, source, param string) {
		specs = append(specs, &constraintSpec{kind: kind, source: source, param: param})
	}
	if rf := bytes.TrimSpace(b.ResponseFormat); !isNull(rf) {
		spec, e := parseResponseFormat(rf)
		if e != nil {
			return nil, e
		}
		if spec != nil {
			specs = append(specs, spec)
		}
	}
	s := &b.structuredBody
	if !isNull(s.GuidedJSON) {
		src, e := schemaSource(s.GuidedJSON, "guided_json")
		if e != nil {
			return nil, e
		}
		add(grammar.KindJSONSchema, src, "guided_json")
	}
	if s.GuidedRegex != nil {
		add(grammar.KindRegex, *s.GuidedRegex, "guided_regex")
	}
	if !isNull(s.GuidedChoice) {
		src, e := choiceSource(s.GuidedChoice, "guided_choice")
		if e != nil {
			return nil, e
		}
		add(grammar.KindChoice, src, "guided_choice")
	}
	if s.GuidedGrammar != nil {
		add(grammar.KindGBNF, *s.GuidedGrammar, "guided_grammar")
	}
	if s.GuidedWhitespacePattern != nil {
		return nil, badRequest("guided_whitespace_pattern", "guided_whitespace_pattern is not supported; JSON whitespace is bounded by the server")
	}
	if !isNull(s.StructuredOutputs) {
		spec, e := parseStructuredOutputs(s.StructuredOutputs)
		if e != nil {
			return nil, e
		}
		specs = append(specs, spec)
	}
	if s.Grammar != nil && *s.Grammar != "" {
		add(grammar.KindGBNF, *s.Grammar, "grammar")
	}
	if !isNull(s.JSONSchema) {
		src, e := schemaSource(s.JSONSchema, "json_schema")
		if e != nil {
			return nil, e
		}
		add(grammar.KindJSONSchema, src, "json_schema")
	}
	switch len(specs) {
	case 0:
		return nil, nil
	case 1:
		return specs[0], nil
	}
	return nil, badRequest(specs[1].param, "%s and %s both constrain the output; give only one", specs[0].param, specs[1].param)
}

// schemaSource accepts a schema as a JSON object (or boolean), or as a
// string holding one, as vLLM does.
func schemaSource(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(param, "%s: invalid string", param)
		}
		raw = bytes.TrimSpace([]byte(s))
		if !json.Valid(raw) {
			return "", badRequest(param, "%s: the string is not a JSON schema", param)
		}
	}
	if len(raw) == 0 || (raw[0] != '{' && !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false"))) {
		return "", badRequest(param, "%s must be a JSON schema (an object)", param)
	}
	return string(raw), nil
}

func choiceSource(raw json.RawMessage, param string) (string, *apiError) {
	var choices []string
	if err := json.Unmarshal(raw, &choices); err != nil {
		return "", badRequest(param, "%s must be an array of strings", param)
	}
	if len(choices) == 0 {
		return "", badRequest(param, "%s must not be empty", param)
	}
	src, _ := json.Marshal(choices)
	return string(src), nil
}

// parseResponseFormat reads OpenAI's response_format (and llama.cpp's
// variant with a schema beside json_object).
func parseResponseFormat(raw json.RawMessage) (*constraintSpec, *apiError) {
	var f struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, badRequest("response_format", "response_format must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", …}: %v", err)
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		if !isNull(f.Schema) {
			src, e := schemaSource(f.Schema, "response_format.schema")
			if e != nil {
				return nil, e
			}
			return &constraintSpec{kind: grammar.KindJSONSchema, source: src, param: "response_format.schema"}, nil
		}
		return &constraintSpec{kind: grammar.KindJSONObject, param: "response_format"}, nil
	case "json_schema":
		js := f.JSONSchema
		if js == nil {
			return nil, badRequest("response_format.json_schema", "response_format of type json_schema needs a json_schema object")
		}
		if js.Name == "" || len(js.Name) > 64 || strings.Trim(js.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return nil, badRequest("response_format.json_schema.name", "response_format.json_schema.name must be 1 to 64 letters, digits, underscores or dashes, got %q", js.Name)
		}
		if isNull(js.Schema) {
			// OpenAI makes the schema optional: then any JSON object.
			return &constraintSpec{kind: grammar.KindJSONObject, param: "response_format.json_schema"}, nil
		}
		src, e := schemaSource(js.Schema, "response_format.json_schema.schema")
		if e != nil {
			return nil, e
		}
		return &constraintSpec{kind: grammar.KindJSONSchema, source: src, param: "response_format.json_schema.schema"}, nil
	case "":
		return nil, badRequest("response_format.type", "response_format.type is required")
	}
	return nil, badRequest("response_format.type", "response_format.type %q is not supported (want text, json_object or json_schema)", f.Type)
}

// parseStructuredOutputs reads vLLM's structured_outputs object.
func parseStructuredOutputs(raw json.RawMessage) (*constraintSpec, *apiError) {
	var so struct {
		JSON       json.RawMessage `json:"json"`
		Regex      *string         `json:"regex"`
		Choice     json.RawMessage `json:"choice"`
		Grammar    *string         `json:"grammar"`
		JSONObject *bool           `json:"json_object"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&so); err != nil {
		return nil, badRequest("structured_outputs", "structured_outputs: %v", err)
	}
	var out []*constraintSpec
	if !isNull(so.JSON) {
		src, e := schemaSource(so.JSON, "structured_outputs.json")
		if e != nil {
			return nil, e
		}
		out = append(out, &constraintSpec{grammar.KindJSONSchema, src, "structured_outputs.json"})
	}
	if so.Regex != nil {
		out = append(out, &constraintSpec{grammar.KindRegex, *so.Regex, "structured_outputs.regex"})
	}
	if !isNull(so.Choice) {
		src, e := choiceSource(so.Choice, "structured_outputs.choice")
		if e != nil {
			return nil, e
		}
		out = append(out, &constraintSpec{grammar.KindChoice, src, "structured_outputs.choice"})
	}
	if so.Grammar != nil {
		out = append(out, &constraintSpec{grammar.KindGBNF, *so.Grammar, "structured_outputs.grammar"})
	}
	if so.JSONObject != nil && *so.JSONObject {
		out = append(out, &constraintSpec{grammar.KindJSONObject, "", "structured_outputs.json_object"})
	}
	if len(out) != 1 {
		return nil, badRequest("structured_outputs", "structured_outputs must set exactly one of json, regex, choice, grammar or json_object")
	}
	return out[0], nil
}

// grammarCache holds the compiled grammars of one engine, paired with its
// vocabulary, so that a schema sent again reuses its cached token masks.
// It is bounded in entries and in the bytes the indexes hold.
type grammarCache struct {
	tok     grammar.TokenSource
	lim     grammar.Limits
	maxN    int
	maxSize int

	vocabOnce sync.Once
	vocab     *grammar.Vocab
	vocabErr  error

	mu    sync.Mutex
	lru   *list.List // of *cacheEntry, most recent first
	byKey map[string]*list.Element
}

type cacheEntry struct {
	key string
	ix  *grammar.Index
}

func newGrammarCache(tok grammar.TokenSource) *grammarCache {
	return &grammarCache{tok: tok, maxN: 64, maxSize: 256 << 20, lru: list.New(), byKey: map[string]*list.Element{}}
}

// index returns the index of spec's grammar, compiling it if needed.
func (c *grammarCache) index(spec *constraintSpec) (*grammar.Index, *apiError) {
	c.vocabOnce.Do(func() { c.vocab, c.vocabErr = grammar.NewVocab(c.tok) })
	if c.vocabErr != nil {
		return nil, badRequest(spec.param, "structured outputs are not available with this model: %v", c.vocabErr)
	}
	key := string(spec.kind) + "\x00" + spec.source
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		ix := el.Value.(*cacheEntry).ix
		if ix.Err() == nil {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return ix, nil
		}
		// An index that ran into a limit is rebuilt.
		c.lru.Remove(el)
		delete(c.byKey, key)
	}
	c.mu.Unlock()
	var g *grammar.Grammar
	var err error
	if spec.kind == kindToolCalls {
		g, err = toolcall.RequiredGrammar(spec.source, c.lim)
	} else {
		g, err = grammar.Compile(spec.kind, spec.source, c.lim)
	}
	var ix *grammar.Index
	if err == nil {
		ix, err = grammar.NewIndex(g, c.vocab, c.lim)
	}
	if err != nil {
		return nil, grammarError(spec.param, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok { // compiled meanwhile by another request
		return el.Value.(*cacheEntry).ix, nil
	}
	c.byKey[key] = c.lru.PushFront(&cacheEntry{key: key, ix: ix})
	c.evict()
	return ix, nil
}

func (c *grammarCache) evict() {
	total := 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		total += el.Value.(*cacheEntry).ix.Bytes()
	}
	for c.lru.Len() > 1 && (c.lru.Len() > c.maxN || total > c.maxSize) {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		total -= e.ix.Bytes()
		c.lru.Remove(el)
		delete(c.byKey, e.key)
	}
}

// grammarError turns a compile error into a 400 naming the field and what
// is wrong with it.
func grammarError(param string, err error) *apiError {
	what := "is invalid"
	switch {
	case errors.Is(err, grammar.ErrUnsatisfiable):
		what = "can never be satisfied"
	case errors.Is(err, grammar.ErrUnsupported):
		what = "uses a feature structured outputs do not support"
	case errors.Is(err, grammar.ErrLimit):
		what = "is too large or complex for structured outputs"
	case errors.Is(err, grammar.ErrSyntax):
		what = "does not parse"
	}
	return badRequest(param, "%s %s: %v", param, what, err)
}

// constraintIndex returns the index a request's sequences decode under,
// or nil when the request has no constraint.
func (st *engineState) constraintIndex(spec *constraintSpec) (*grammar.Index, *apiError) {
	if spec == nil {
		return nil, nil
	}
	return st.grammars.index(spec)
}
