package tasks

import "github.com/ttis-dev/ttis/evalsuite"

// Tasks the catalog references that ttis does not run yet, each with the
// reason; verdicts count them as not measured.
func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "ruler", Output: gen,
		Description: "RULER long-context retrieval, aggregation and QA at 4K-64K tokens",
		Follows:     "lm-eval fork lm_eval/tasks/ruler/ruler.yaml",
		NotRunnable: "the group's documents depend on an lm-eval version ttis cannot read: lm-eval seeds Python's random and numpy once (evaluator.py simple_evaluate, before get_task_dict) and every subtask draws its documents from that one state while it is built (ConfigurableTask.__init__ -> download -> custom_dataset), so each subtask's documents depend on the ones built before it; lm-eval v0.4.9-v0.4.11, the releases with RULER before v0.4.12 (and the TT fork's v0.4.9 base, branch adam/rebase-elutherai 4acd692) build a group's subtasks in reverse list order (lm_eval/tasks/__init__.py, map(fn, reversed(subtask_list)): ruler_qa_hotpot first, niah_single_1 last), lm-eval v0.4.12 and later in list order (lm_eval/tasks/_factory.py _build_group_members), and the branch tt-inference-server pins (tstescoTT/lm-evaluation-harness@evals-common) is not in any source ttis could read; the 13 subtasks run standalone by name, as `lm_eval --tasks NAME` builds them"}, nil)
	register(Info{Name: "longbench2_generate", Output: gen,
		Description: "LongBench v2 answered by generation on the chat API",
		Follows:     "tt-inference-server's lm-eval fork, branch evals-common (not published in a source ttis could read)",
		NotRunnable: "its definition lives only in tt-inference-server's unpublished lm-eval fork branch (evals-common); upstream lm-eval's longbench2 scores choices by log-likelihood, a different task, so ttis cannot reproduce it honestly"}, nil)
}
