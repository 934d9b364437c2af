"""Runs lm-evaluation-harness's own filter and metric code on the inputs of
gsm8k_golden.json and other_golden.json and writes lmeval_reference.json,
which reference_test.go compares the Go filters and exact_match with.

lm-eval's classes are used as they are: RegexFilter, WhitespaceFilter
(lm_eval/filters/extraction.py), TakeFirstFilter (selection.py) and
exact_match_hf_evaluate (lm_eval/api/metrics.py). Run from this folder with
lm-eval's lm_eval/api, lm_eval/filters and lm_eval/utils.py at LMEVAL
(an empty lm_eval/__init__.py above them; sacrebleu, which metrics.py
imports for BLEU only, is stubbed) and Debian's python3-numpy:
  LMEVAL=<dir> /usr/bin/python3 lmeval_reference.py > lmeval_reference.json
"""
import json
import os
import sys
import types

sys.path.insert(0, os.environ["LMEVAL"])
sys.modules["sacrebleu"] = types.ModuleType("sacrebleu")

from lm_eval.api.metrics import exact_match_hf_evaluate  # noqa: E402
from lm_eval.filters.extraction import RegexFilter, WhitespaceFilter  # noqa: E402
from lm_eval.filters.selection import TakeFirstFilter  # noqa: E402

COMMIT = "4e7e0d47f33bc71070c1d38394bafbb52b117163"

CHAINS = {
    # gsm8k.yaml
    "strict-match": [RegexFilter(r"#### (\-?[0-9\.\,]+)"), TakeFirstFilter()],
    "flexible-extract": [RegexFilter(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", group_select=-1), TakeFirstFilter()],
    # the chains other_golden.json names (filter_test.go's TestOtherGolden)
    "get_response": [RegexFilter(r"^(.*?)(?=\n|$)"), WhitespaceFilter(), TakeFirstFilter()],
    "gpqa-strict": [RegexFilter(r"(?<=The answer is )(.*)(?=.)"), TakeFirstFilter()],
    "cot-strict": [RegexFilter(r"The answer is (\-?[0-9\.\,]+)."), TakeFirstFilter()],
    "optional-group": [RegexFilter(r"answer:(\d*)")],
    "empty-tuple": [RegexFilter(r"(a*)(b*)")],
}
GSM8K_EM = {"ignore_case": True, "ignore_punctuation": False, "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}


def run(chain, response):
    resps = [[response]]
    for f in CHAINS[chain]:
        resps = list(f.apply(resps, [{}]))
    out = resps[0]
    return out if isinstance(out, str) else out[0]


def em(pred, target, opts):
    return float(exact_match_hf_evaluate([pred], [target], **opts)["exact_match"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = {"lm_eval_commit": COMMIT, "gsm8k": [], "other": []}
    for c in json.load(open(os.path.join(here, "gsm8k_golden.json"), encoding="utf-8")):
        row = {"name": c["name"], "filtered": {}, "exact_match": {}}
        for chain in ("strict-match", "flexible-extract"):
            got = run(chain, c["response"])
            row["filtered"][chain] = got
            row["exact_match"][chain] = em(got, c["target"], GSM8K_EM)
        out["gsm8k"].append(row)
    for c in json.load(open(os.path.join(here, "other_golden.json"), encoding="utf-8")):
        got = run(c["chain"], c["response"])
        opts = {k: v for k, v in c.get("em", {}).items()}
        out["other"].append({"name": c["name"], "filtered": got, "exact_match": em(got, c["target"], opts)})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


main()
