# Re-derives multichoice_golden.json with Python's re and unicodedata, following
# lm-eval's regex and multi_choice_regex filters (run from this directory).
import json, re, sys, unicodedata
PUNCT = dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))
def ign(s): return s.lower().translate(PUNCT)
def find(regex, resp, gs, conv=None):
    conv = conv or {}
    m = regex.findall(resp)
    if m:
        m = m[gs]
        if isinstance(m, tuple):
            ne = [x for x in m if x]
            if not ne: return ""
            m = ne[0]
        m = m.strip()
        if m and m in conv: m = conv[m]
    return m
def mcr(resp, choices, n=4):
    gs=-1
    prim = re.compile(r"(\([A-Z]\))")
    fb=[]; c2a={}; letters=[]; bare={}
    if choices is not None:
        n=len(choices)
        for i,c in enumerate(choices):
            m=ign(c.strip()); fb.append(re.escape(m)); c2a[m]="(%s)"%chr(65+i)
    for i in range(n):
        letters.append(chr(65+i)); bare[chr(65+i)]="(%s)"%chr(65+i)
    m = find(prim, resp, gs)
    if not m and choices is not None:
        m = find(re.compile("|".join(fb)), ign(resp), gs, c2a)
    if not m:
        m = find(re.compile(r":[\s]*(" + "|".join(letters) + ")"), resp, gs, bare)
    return m or "[invalid]"
def strict(resp):
    m = re.compile(r"(?<=The answer is )(.*)(?=.)").findall(resp)
    return m[0].strip() if m else "[invalid]"
def custom(resp):
    m = re.compile(r"answer is \(?([ABCDEFGHIJ])\)?").findall(resp)
    return m[0].strip() if m else "[invalid]"
cases = json.load(open("multichoice_golden.json"))
ok = True
for c in cases:
    ch = c.get("choices")
    got = {"strict-match": strict(c["response"]), "flexible-extract": mcr(c["response"], ch),
           "flexible-extract-without-choices": mcr(c["response"], None), "custom-extract": custom(c["response"])}
    if got != c["filtered"]:
        ok = False
        print("MISMATCH", c["name"], got)
print("ok" if ok else "FAILED")
