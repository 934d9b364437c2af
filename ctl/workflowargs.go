package ctl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// run.py's --workflow-args is a free-form "key=value key=value" string
// (seed 000: "param1=value1 param2=value2") that run.py hands to its
// workflows: its stress tests read run_mode, input_size, output_size,
// max_concurrent, num_prompts, max_context_length, endurance_mode and the
// custom_* sweep values (test_module/stress_tests/run_stress_tests.py), its
// GuideLLM benchmarks scenarios, backend_kwargs and multiturn_data
// (llm_module/guidellm_scenarios.py); keys are read with '-' as '_'. ttisctl
// takes the same string on bench, eval and release, maps each key ttis has
// a setting for onto that setting, and refuses the others by name.

// workflowArgsFlag is the flag of the three commands.
func workflowArgsFlag() cli.Flag {
	return &cli.StringFlag{Name: "workflow-args", Usage: "run.py's --workflow-args: \"key=value key=value\" (bench: run_mode, input_size, output_size, max_concurrent, num_prompts, use_server_tokenizer; release: num_prompts)"}
}

// workflowArg is one key=value of --workflow-args.
type workflowArg struct{ Key, Value string }

// parseWorkflowArgs splits s on white space into key=value pairs, keys
// read with '-' as '_' as run.py reads them. Every token must have a key
// and '='; a key may appear once.
func parseWorkflowArgs(s string) ([]workflowArg, error) {
	var out []workflowArg
	seen := map[string]bool{}
	for i, tok := range strings.Fields(s) {
		k, v, ok := strings.Cut(tok, "=")
		k = strings.ReplaceAll(k, "-", "_")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("--workflow-args token %d %q: want key=value", i+1, tok)
		case seen[k]:
			return nil, fmt.Errorf("--workflow-args: %s given twice", k)
		}
		seen[k] = true
		out = append(out, workflowArg{Key: k, Value: v})
	}
	return out, nil
}

// unsupportedWorkflowArgs are run.py's keys ttis has no setting for, with
// why.
var unsupportedWorkflowArgs = map[string]string{
	"max_context_length":          "ttis plans its sweep from the catalog's context length (or the server's), and has no stress-test context cap",
	"endurance_mode":              "ttis has no 24-hour endurance run; schedule releases with [[schedule]] in the unit instead",
	"custom_isl_values":           "ttis has no cross-product stress sweep; run points with ttisctl bench --isl/--osl/--max-concurrency",
	"custom_osl_values":           "ttis has no cross-product stress sweep; run points with ttisctl bench --isl/--osl/--max-concurrency",
	"custom_concurrency_values":   "ttis has no cross-product stress sweep; run points with ttisctl bench --isl/--osl/--max-concurrency",
	"custom_num_prompts_strategy": "ttis has no cross-product stress sweep; --num-prompts sets the count",
	"only_match_concurrency":      "ttis has no cross-product stress sweep",
	"scenarios":                   "a GuideLLM setting: ttis measures with its own load generator, not GuideLLM",
	"scenario":                    "a GuideLLM setting: ttis measures with its own load generator, not GuideLLM",
	"backend_kwargs":              "a GuideLLM setting: ttis measures with its own load generator, not GuideLLM",
	"multiturn_data":              "a GuideLLM setting: ttis measures with its own load generator, not GuideLLM",
}

// benchWorkflowArgs maps run.py's single-point stress keys onto bench's
// flags.
var benchWorkflowArgs = map[string]string{
	"input_size":     "isl",
	"output_size":    "osl",
	"max_concurrent": "max-concurrency",
	"num_prompts":    "num-prompts",
}

// applyWorkflowArgs reads --workflow-args of the command and sets the
// flags its keys map to. A flag given with another value is a usage error
// naming both; a key ttis has no setting for, or that does not apply to
// the command, is refused with why. run_mode=single is bench's one point,
// multiple a sweep (--limit ci-nightly unless --limit is given).
func applyWorkflowArgs(c *cli.Context) error {
	args, err := parseWorkflowArgs(c.String("workflow-args"))
	if err != nil {
		return usageError(c, "%v", err)
	}
	cmd := c.Command.Name
	set := func(a workflowArg, flag, value string) error {
		if c.IsSet(flag) {
			if fmt.Sprint(c.Value(flag)) != value {
				return usageError(c, "--workflow-args %s=%s and --%s %v disagree", a.Key, a.Value, flag, c.Value(flag))
			}
			return nil
		}
		if err := c.Set(flag, value); err != nil {
			return usageError(c, "--workflow-args %s=%s: %v", a.Key, a.Value, err)
		}
		return nil
	}
	positive := func(a workflowArg) (string, error) {
		n, err := strconv.Atoi(a.Value)
		if err != nil || n < 1 {
			return "", usageError(c, "--workflow-args %s=%q: want a positive integer", a.Key, a.Value)
		}
		return strconv.Itoa(n), nil
	}
	for _, a := range args {
		if why, ok := unsupportedWorkflowArgs[a.Key]; ok {
			return usageError(c, "--workflow-args %s: not supported: %s", a.Key, why)
		}
		switch {
		case cmd == "bench" && benchWorkflowArgs[a.Key] != "":
			v, err := positive(a)
			if err != nil {
				return err
			}
			if err := set(a, benchWorkflowArgs[a.Key], v); err != nil {
				return err
			}
		case cmd == "bench" && a.Key == "use_server_tokenizer":
			b, err := strconv.ParseBool(a.Value)
			if err != nil {
				return usageError(c, "--workflow-args use_server_tokenizer=%q: want true or false", a.Value)
			}
			if err := set(a, "no-server-tokenizer", strconv.FormatBool(!b)); err != nil {
				return err
			}
		case cmd == "bench" && a.Key == "run_mode":
			// single: one point (no --limit); multiple: a sweep.
			switch a.Value {
			case "single":
				if c.IsSet("limit") {
					return usageError(c, "--workflow-args run_mode=single runs one point: drop --limit %s", c.String("limit"))
				}
			case "multiple":
				if !c.IsSet("limit") {
					if err := c.Set("limit", "ci-nightly"); err != nil {
						return usageError(c, "%v", err)
					}
				}
			case "custom":
				return usageError(c, "--workflow-args run_mode=custom: not supported: %s", unsupportedWorkflowArgs["custom_isl_values"])
			default:
				return usageError(c, "--workflow-args run_mode=%q: want single, multiple or custom", a.Value)
			}
		case cmd == "release" && a.Key == "num_prompts":
			if _, err := positive(a); err != nil {
				return err
			}
		case slices.Contains([]string{"input_size", "output_size", "max_concurrent", "num_prompts", "use_server_tokenizer", "run_mode"}, a.Key):
			return usageError(c, "--workflow-args %s applies to ttisctl bench%s, not to %s", a.Key,
				map[bool]string{true: " and release", false: ""}[a.Key == "num_prompts"], cmd)
		default:
			return usageError(c, "--workflow-args %s: unknown key (run.py's workflows read run_mode, input_size, output_size, max_concurrent, num_prompts, use_server_tokenizer, max_context_length, endurance_mode, custom_*_values, custom_num_prompts_strategy, only_match_concurrency, scenarios, backend_kwargs, multiturn_data)", a.Key)
		}
	}
	return nil
}

// workflowArgsNumPrompts is release's num_prompts from --workflow-args (0:
// none).
func workflowArgsNumPrompts(c *cli.Context) int {
	args, _ := parseWorkflowArgs(c.String("workflow-args"))
	for _, a := range args {
		if a.Key == "num_prompts" {
			n, _ := strconv.Atoi(a.Value)
			return n
		}
	}
	return 0
}
