package tasks

import "github.com/ttis-dev/ttis/evalsuite"

// Tasks the catalog references that ttis does not run yet, each with the
// reason; verdicts count them as not measured.
func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "ruler", Output: gen,
		Description: "RULER long-context retrieval, aggregation and QA at 4K-64K tokens",
		Follows:     "lm-eval fork lm_eval/tasks/ruler/ruler.yaml",
		NotRunnable: "the group is the unweighted mean of 13 subtasks and ttis generates eight, run by name: niah_single_1, niah_multikey_2 and ruler_cwe (with wonderwords' word lists given as --dataset), niah_multikey_3, ruler_vt, ruler_fwe, ruler_qa_hotpot and ruler_qa_squad; the five essay tasks (niah_single_2, niah_single_3, niah_multikey_1, niah_multivalue, niah_multiquery) split baber/paul_graham_essays into sentences with NLTK's trained Punkt model, which ttis has not reproduced"}, nil)
	register(Info{Name: "longbench2_generate", Output: gen,
		Description: "LongBench v2 answered by generation on the chat API",
		Follows:     "tt-inference-server's lm-eval fork, branch evals-common (not published in a source ttis could read)",
		NotRunnable: "its definition lives only in tt-inference-server's unpublished lm-eval fork branch (evals-common); upstream lm-eval's longbench2 scores choices by log-likelihood, a different task, so ttis cannot reproduce it honestly"}, nil)
}
