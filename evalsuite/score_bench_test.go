package evalsuite_test

import (
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
)

// BenchmarkScoreGSM8KDoc measures Task.Score for one gsm8k-style document
// (both filters, exact_match with gsm8k's normalisation).
func BenchmarkScoreGSM8KDoc(b *testing.B) {
	task, err := tasks.Build("ttis_arith", tasks.Source{Size: 1, NumFewShot: 0})
	if err != nil {
		b.Fatal(err)
	}
	resp := []evalsuite.Response{{Text: " 3 + 4 = 7 apples.\n7 - 2 = 5.\n#### 5\n\nQuestion:"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := task.Score(task.Docs[0], resp); err != nil {
			b.Fatal(err)
		}
	}
}
