package cpu

import (
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/tokenizer"
)

// loadTokenizer reads the tokenizer stored in the GGUF metadata.
func loadTokenizer(f *gguf.File) (runtime.Tokenizer, error) {
	t, err := tokenizer.New(f)
	if err != nil {
		return nil, err
	}
	return t, nil
}
