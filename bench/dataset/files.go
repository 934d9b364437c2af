package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/units/hardened"
)

// MaxFileBytes bounds a dataset file: it is parsed whole in memory, and
// ShareGPT's is about 670 MB.
const MaxFileBytes = 4 << 30

// openFile opens a dataset file the hardened way (units/hardened): a
// named pipe or a device node in its place is refused rather than waited
// on or read forever, and a file over MaxFileBytes rather than parsed.
func openFile(ctx context.Context, path string) (*os.File, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return hardened.Open(ctx, path, MaxFileBytes)
}

// Pair is one usable ShareGPT conversation: the first turn is the prompt,
// the second the reference completion.
type Pair struct {
	Prompt, Completion string
}

// ParseShareGPT reads a ShareGPT JSON file: an array of objects with a
// "conversations" list of {"from", "value"} turns. Entries with fewer than
// two turns are skipped, as vLLM does; a structurally wrong entry is an
// error naming its index.
func ParseShareGPT(r io.Reader, name string) ([]Pair, error) {
	var raw []json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of conversations: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the JSON array", name)
	}
	var out []Pair
	for i, m := range raw {
		var entry struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal(m, &entry); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", name, i, err)
		}
		if len(entry.Conversations) < 2 {
			continue
		}
		out = append(out, Pair{Prompt: entry.Conversations[0].Value, Completion: entry.Conversations[1].Value})
	}
	return out, nil
}

// ShareGPTOptions shape a ShareGPT dataset.
type ShareGPTOptions struct {
	Path       string
	NumPrompts int
	// OutputLen overrides the reference completion's length when > 0.
	OutputLen int
	Seed      int64
}

// ShareGPT loads a ShareGPT file and keeps pairs with vLLM's rules: prompt
// and output at least 4 tokens, prompt at most 1024, prompt+output at most
// 2048. Lengths come from tok (word counts when tok is nil). The pairs are
// shuffled with the seed and oversampled when too few remain.
func ShareGPT(ctx context.Context, tok Tokenizer, o ShareGPTOptions) (*Set, error) {
	if o.NumPrompts < 1 {
		return nil, fmt.Errorf("sharegpt dataset: number of prompts %d must be at least 1", o.NumPrompts)
	}
	f, err := openFile(ctx, o.Path)
	if err != nil {
		return nil, fmt.Errorf("sharegpt dataset: %w", err)
	}
	defer f.Close()
	pairs, err := ParseShareGPT(bufio.NewReader(f), o.Path)
	if err != nil {
		return nil, err
	}
	rng := newRNG(o.Seed)
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	set := &Set{Name: "sharegpt", Tokenizer: ApproxTokenizerName}
	if tok != nil {
		set.Tokenizer = tok.Name()
	}
	for _, p := range pairs {
		if len(set.Prompts) >= o.NumPrompts {
			break
		}
		pl, err := countTokens(ctx, tok, p.Prompt, true)
		if err != nil {
			return nil, fmt.Errorf("sharegpt dataset: %w", err)
		}
		ol := o.OutputLen
		if ol <= 0 {
			if ol, err = countTokens(ctx, tok, p.Completion, false); err != nil {
				return nil, fmt.Errorf("sharegpt dataset: %w", err)
			}
		}
		if !validSequence(pl, ol, o.OutputLen > 0) {
			continue
		}
		set.Prompts = append(set.Prompts, Prompt{Text: p.Prompt, PromptTokens: pl, OutputTokens: ol})
	}
	if len(set.Prompts) == 0 {
		return nil, fmt.Errorf("sharegpt dataset: %s has no conversation within the length rules (prompt 4..1024 tokens, prompt+output <= 2048)", o.Path)
	}
	oversample(set, o.NumPrompts, rng)
	return set, nil
}

// validSequence is vLLM's is_valid_sequence with its defaults; a fixed
// output length skips the output checks.
func validSequence(promptLen, outputLen int, fixedOutput bool) bool {
	if promptLen < 4 || promptLen > 1024 {
		return false
	}
	if fixedOutput {
		return true
	}
	return outputLen >= 4 && promptLen+outputLen <= 2048
}

// CustomRow is one line of a custom JSONL dataset.
type CustomRow struct {
	Prompt string `json:"prompt"`
	// OutputTokens overrides the default output length for this row.
	OutputTokens int `json:"output_tokens,omitempty"`
}

// maxCustomLine bounds one JSONL line.
const maxCustomLine = 16 << 20

// ParseCustom reads JSONL rows of {"prompt": "...", "output_tokens": N}.
// Blank lines are skipped; anything else wrong is an error naming the line.
func ParseCustom(r io.Reader, name string) ([]CustomRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxCustomLine)
	var rows []CustomRow
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var row CustomRow
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value on the line", name, line)
		}
		if strings.TrimSpace(row.Prompt) == "" {
			return nil, fmt.Errorf("%s:%d: field \"prompt\" is missing or empty", name, line)
		}
		if row.OutputTokens < 0 {
			return nil, fmt.Errorf("%s:%d: field \"output_tokens\" is negative", name, line)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d bytes", name, maxCustomLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return rows, nil
}

// CustomOptions shape a custom JSONL dataset.
type CustomOptions struct {
	Path       string
	NumPrompts int
	// OutputLen is the output length of rows without output_tokens
	// (vLLM's --custom-output-len, default 256).
	OutputLen int
	Seed      int64
	// Shuffle the rows with the seed.
	Shuffle bool
}

// Custom loads a custom JSONL dataset.
func Custom(ctx context.Context, tok Tokenizer, o CustomOptions) (*Set, error) {
	if o.NumPrompts < 1 {
		return nil, fmt.Errorf("custom dataset: number of prompts %d must be at least 1", o.NumPrompts)
	}
	if o.OutputLen < 1 {
		o.OutputLen = 256
	}
	f, err := openFile(ctx, o.Path)
	if err != nil {
		return nil, fmt.Errorf("custom dataset: %w", err)
	}
	defer f.Close()
	rows, err := ParseCustom(f, o.Path)
	if err != nil {
		return nil, fmt.Errorf("custom dataset: %w", err)
	}
	rng := newRNG(o.Seed)
	if o.Shuffle {
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	set := &Set{Name: "custom", Tokenizer: ApproxTokenizerName}
	if tok != nil {
		set.Tokenizer = tok.Name()
	}
	for _, r := range rows {
		if len(set.Prompts) >= o.NumPrompts {
			break
		}
		pl, err := countTokens(ctx, tok, r.Prompt, true)
		if err != nil {
			return nil, fmt.Errorf("custom dataset: %w", err)
		}
		ol := r.OutputTokens
		if ol == 0 {
			ol = o.OutputLen
		}
		set.Prompts = append(set.Prompts, Prompt{Text: r.Prompt, PromptTokens: pl, OutputTokens: ol})
	}
	oversample(set, o.NumPrompts, rng)
	return set, nil
}

// countTokens measures text with tok, or counts words without one.
func countTokens(ctx context.Context, tok Tokenizer, text string, addSpecial bool) (int, error) {
	if tok == nil {
		return len(strings.Fields(text)), nil
	}
	ids, err := tok.Tokenize(ctx, text, addSpecial)
	if err != nil {
		return 0, fmt.Errorf("server tokenizer: %w", err)
	}
	return len(ids), nil
}
