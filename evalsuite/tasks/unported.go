package tasks

import "github.com/ttis-dev/ttis/evalsuite"

// Tasks the catalog references that ttis does not run yet, each with the
// reason; verdicts count them as not measured.
func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "ruler", Output: gen,
		Description: "RULER long-context retrieval, aggregation and QA at 4K-64K tokens",
		Follows:     "lm-eval fork lm_eval/tasks/ruler/ruler.yaml",
		NotRunnable: "the group is the unweighted mean of 13 subtasks, and ttis generates all 13 only as standalone tasks, run by name (the niah_* word and essay tasks and ruler_cwe with their word lists, Punkt parameters and essays given as --dataset): inside the group lm-eval builds each subtask after the ones listed before it from one global random and numpy state seeded once, so the group's documents are not the standalone ones, and ttis has no group runner that chains the generators"}, nil)
	register(Info{Name: "longbench2_generate", Output: gen,
		Description: "LongBench v2 answered by generation on the chat API",
		Follows:     "tt-inference-server's lm-eval fork, branch evals-common (not published in a source ttis could read)",
		NotRunnable: "its definition lives only in tt-inference-server's unpublished lm-eval fork branch (evals-common); upstream lm-eval's longbench2 scores choices by log-likelihood, a different task, so ttis cannot reproduce it honestly"}, nil)
}
