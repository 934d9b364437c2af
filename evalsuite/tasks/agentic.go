package tasks

// The agentic suites the catalog references run a model as an agent over
// many turns inside containers with a harness of their own (tool calls, a
// repository or terminal to act on, a verifier): tt-inference-server runs
// them through its EVALS_AGENTIC workflow, outside lm-eval. ttis has no
// such harness, so they are listed here as not runnable; a verdict counts
// them as not measured, never as passed.
func init() {
	const harness = "an agentic harness ttis does not run"
	for _, a := range []struct{ name, what, follows string }{
		{"swe_bench_verified", "SWE-bench Verified: the model edits a Python repository in a Docker sandbox with mini-swe-agent until the instance's hidden tests pass", "tt-inference-server reference_config/evals/eval_config.py SWEbenchEvalConfig"},
		{"terminal_bench_2", "Terminal-Bench 2.0: the model drives a terminal in a task container through the terminal-bench agent loop, graded by each task's tests", "tt-inference-server reference_config/evals/eval_config.py TerminalBenchEvalConfig"},
		{"terminal_bench_2_1", "Terminal-Bench 2.1: as terminal_bench_2 on the 2.1 task set", "tt-inference-server reference_config/evals/eval_config.py TerminalBenchEvalConfig"},
		{"tau3_bench_banking", "tau3-bench banking: the model serves a simulated customer with tool calls against a banking environment, graded by the environment's end state", "tt-inference-server reference_config/evals/eval_config.py (EVALS_AGENTIC)"},
	} {
		register(Info{Name: a.name, Output: "agentic", Description: a.what, Follows: a.follows,
			NotRunnable: harness + " (" + a.what + ")"}, nil)
	}
}
