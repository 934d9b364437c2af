# Cross-checks gsm8k_golden.json with Python's own `re`, re-stating lm-eval's
# documented RegexFilter and exact_match logic. Not run by `go test`; run it
# by hand (python3 gsm8k_check.py) after editing the golden cases.
import json, re, string

def regex_filter(pattern, group_select, resp):
    m = re.compile(pattern).findall(resp)
    if not m:
        return "[invalid]"
    m = m[group_select]
    if isinstance(m, tuple):
        m = [x for x in m if x]
        m = m[0] if m else "[invalid]"
    return m.strip()

IGN = [",", r"\$", r"(?s).*#### ", r"\.$"]
def em(p, r):
    for s in IGN:
        p = re.sub(s, "", p); r = re.sub(s, "", r)
    return float(p.lower() == r.lower())

ok = True
for c in json.load(open("gsm8k_golden.json")):
    f = {"strict-match": regex_filter(r"#### (\-?[0-9\.\,]+)", 0, c["response"]),
         "flexible-extract": regex_filter(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1, c["response"])}
    e = {k: em(v, c["target"]) for k, v in f.items()}
    if f != c["filtered"] or e != {k: float(v) for k, v in c["exact_match"].items()}:
        ok = False
        print("MISMATCH", c["name"], f, e)
print("ok" if ok else "FAILED")
