package release

import (
	"reflect"
	"testing"
)

func TestGroupBlockers(t *testing.T) {
	down := "the Hub could not be reached: http://127.0.0.1:9 (connection refused)"
	list := []Blocker{
		{Key: "evals:a", Message: "no data: A", Cause: down, Fix: "ttisctl dataset pull a"},
		{Key: "evals:x", Message: "ttis cannot run it: FID"},
		{Key: "evals:b", Message: "no data: B", Cause: down, Fix: "ttisctl dataset pull b --catalog-model M"},
		{Key: "evals:y", Message: "ttis cannot run it: FID"},
		{Key: "evals:c", Message: "no data: C", Cause: down, Fix: "ttisctl dataset pull c --catalog-model M"},
	}
	got := GroupBlockers(list)
	want := []Group{
		{Cause: down, Fix: "ttisctl dataset pull a b c --catalog-model M", Items: []Blocker{list[0], list[2], list[4]}},
		{Items: []Blocker{list[1], list[3]}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GroupBlockers =\n%+v\nwant\n%+v", got, want)
	}
	for in, want := range map[string][]string{
		"ttisctl dataset pull a b":                     {"ttisctl dataset pull a", "ttisctl dataset pull b", "ttisctl dataset pull a"},
		"ttisctl dataset pull a; ttisctl model pull m": {"ttisctl dataset pull a", "ttisctl model pull m"},
		"": nil,
		"ttisctl dataset pull a --hf-token-file f; true": {"ttisctl dataset pull a --hf-token-file f", "true"},
	} {
		if got := MergeFixes(want); got != in {
			t.Errorf("MergeFixes(%q) = %q, want %q", want, got, in)
		}
	}
}
