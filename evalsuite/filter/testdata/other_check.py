# Cross-checks other_golden.json with Python's `re` (see gsm8k_check.py).
import json, re, string
CHAINS = {
    "get_response": (r"^(.*?)(?=\n|$)", 0, True),
    "gpqa-strict": (r"(?<=The answer is )(.*)(?=.)", 0, False),
    "cot-strict": (r"The answer is (\-?[0-9\.\,]+).", 0, False),
    "optional-group": (r"answer:(\d*)", 0, False),
    "empty-tuple": (r"(a*)(b*)", 0, False),
}
def regex_filter(pattern, group_select, resp):
    m = re.compile(pattern).findall(resp)
    if not m:
        return "[invalid]"
    m = m[group_select]
    if isinstance(m, tuple):
        m = [x for x in m if x]
        m = m[0] if m else "[invalid]"
    return m.strip()
def em(p, r, o):
    for s in o.get("regexes_to_ignore", []):
        p = re.sub(s, "", p); r = re.sub(s, "", r)
    if o.get("ignore_case"):
        p, r = p.lower(), r.lower()
    if o.get("ignore_punctuation"):
        t = str.maketrans("", "", string.punctuation)
        p, r = p.translate(t), r.translate(t)
    return float(p == r)
ok = True
for c in json.load(open("other_golden.json")):
    pat, gs, lstrip = CHAINS[c["chain"]]
    f = regex_filter(pat, gs, c["response"])
    if lstrip:
        f = f.lstrip()
    e = em(f, c["target"], c["em"])
    if f != c["filtered"] or e != c["exact_match"]:
        ok = False
        print("MISMATCH", c["name"], repr(f), e)
print("ok" if ok else "FAILED")
