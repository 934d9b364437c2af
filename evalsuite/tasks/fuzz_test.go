package tasks

import (
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/tasks/internal/r1grade"
)

// FuzzAnswerParsers feeds arbitrary responses to the answer extractors and
// image decoder: none may panic or hang.
func FuzzAnswerParsers(f *testing.F) {
	for _, s := range []string{"\\boxed{\\frac{1}{2}}", "Final Answer: The final answer is $3$. I hope it is correct.", "```python\nx=1\n```", "$$", "\\boxed{", "data:image/png;base64,AAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			return
		}
		_ = FinalAnswer(s)
		_ = ExtractCodeBlock(s)
		_ = r1grade.MathEqual(r1grade.MathCandidate(s), "\\frac{1}{2}")
		_, _ = ImageDataURL(s)
		_, _ = ImageDataURL(map[string]any{"bytes": s})
		_, _ = metaQuestion(s)
	})
}
