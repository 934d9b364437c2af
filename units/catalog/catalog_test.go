package catalog

import (
	"testing"
)

func TestLookupLlama8B(t *testing.T) {
	s, err := Lookup("Llama-3.1-8B-Instruct", "n300")
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxConcurrency != 32 || s.MaxContext != 131072 || s.Status != StatusComplete {
		t.Fatalf("got conc %d ctx %d status %s", s.MaxConcurrency, s.MaxContext, s.Status)
	}
	if len(s.Targets) != 1 || s.Targets[0].TTFTms != 40 || s.Targets[0].TputUser != 41 {
		t.Fatalf("targets %+v", s.Targets)
	}
	if s.ModelID != "id_tt-transformers_Llama-3.1-8B-Instruct_n300" {
		t.Fatalf("model id %s", s.ModelID)
	}
}
