# Re-derives the essay-haystack RULER documents (niah_single_2,
# niah_single_3, niah_multikey_1, niah_multivalue, niah_multiquery) that
# ruler_test.go expects, the way lm-eval's lm_eval/tasks/ruler/
# prepare_niah.py generates them after `lm_eval --seed 42`, each task
# from a fresh seed. Inputs under ruler_essay/: wonderwords/ (the small
# lists of wonderwords/), punkt_tab/ (parameters PunktTrainer learnt from
# internal/punkt/testdata/train.txt, decoded as NLTK 3.9's
# load_punkt_params does) and paul_graham_essays/ (three made-up essays
# in the Hub split's "text" column); the stand-in tokenizer of
# ruler_expected.py (words plus one BOS token). Needs python3-nltk and
# numpy. Run here:
#   python3 ruler_essay_expected.py > ruler_essay_expected.jsonl
import hashlib, json, os, random, re, uuid
from collections import defaultdict

import numpy as np
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

D = "ruler_essay"

def words(name):
    with open(f"{D}/wonderwords/{name}") as f:
        return [w.rstrip() for w in f.readlines()]
WORDS = sorted(list(set(f"{adj}-{noun}" for adj in words("adjectivelist.txt") for noun in words("nounlist.txt"))))
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
TEMPLATE = """Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"""
DEPTHS = list(np.round(np.linspace(0, 100, num=40, endpoint=True)).astype(int))

def rm_nl(s):
    return s[:-1] if s[-1] == "\n" else s

def load_params(folder):
    p = PunktParameters()
    with open(os.path.join(folder, "abbrev_types.txt"), encoding="utf-8") as f:
        p.abbrev_types = {rm_nl(x) for x in f}
    with open(os.path.join(folder, "collocations.tab"), encoding="utf-8") as f:
        p.collocations = {tuple(rm_nl(x).split("\t")) for x in f}
    with open(os.path.join(folder, "sent_starters.txt"), encoding="utf-8") as f:
        p.sent_starters = {rm_nl(x) for x in f}
    with open(os.path.join(folder, "ortho_context.tab"), encoding="utf-8") as f:
        p.ortho_context = defaultdict(int, {a: int(b) for a, b in (tuple(rm_nl(x).split("\t")) for x in f)})
    return p

TOK = PunktSentenceTokenizer(load_params(f"{D}/punkt_tab"))
with open(f"{D}/paul_graham_essays/train-00000-of-00001.jsonl") as f:
    essay = " ".join(json.loads(l)["text"] for l in f)
HAYSTACK = re.sub(r"\s+", " ", essay).split(" ")

def count(text):
    return len(text.split()) + 1

def generate_random(t):
    if t == "numbers":
        return str(random.randint(10**6, 10**7 - 1))
    if t == "uuids":
        return str(uuid.UUID(int=random.getrandbits(128), version=4))
    return random.choice(WORDS)

def io(num_haystack, type_needle_k, type_needle_v, num_needle_k, num_needle_v, num_needle_q):
    keys, values, needles = [], [], []
    for _ in range(num_needle_k):
        keys.append(generate_random(type_needle_k))
        value = []
        for _ in range(num_needle_v):
            value.append(generate_random(type_needle_v))
            needles.append(NEEDLE.format(type_needle_v=type_needle_v, key=keys[-1], value=value[-1]))
        values.append(value)
    random.Random(42).shuffle(needles)
    text = " ".join(HAYSTACK[:num_haystack])
    sents = TOK.tokenize(text.strip())
    pos = [0] + sorted([int(len(sents) * (depth / 100)) for depth in random.sample(DEPTHS, len(needles))]) + [len(sents)]
    parts = []
    for i in range(1, len(pos)):
        parts.append(" ".join(sents[pos[i - 1]:pos[i]]))
        if i - 1 < len(needles):
            parts.append(needles[i - 1])
    context = " ".join(parts)
    indices = random.sample(range(num_needle_k), num_needle_q)
    queries = [keys[i] for i in indices]
    answers = [a for i in indices for a in values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    template = TEMPLATE
    if num_needle_q * num_needle_v == 1:
        template = template.replace("Some", "A").replace("are all", "is").replace("are", "is").replace("answers", "answer")
        type_needle_v = type_needle_v[:-1]
    return template.format(type_needle_v=type_needle_v, context=context, query=query), answers, query

def samples(max_len, n, k, v, nk, nv, nq):
    nk = max(nk, nq)
    incremental = 500
    num_haystack, total = incremental, 0
    while total + 128 < max_len:
        text, answer, _ = io(num_haystack, k, v, nk, nv, nq)
        total = count(text + " ".join(answer))
        if total + 128 > max_len:
            num_haystack -= incremental
            break
        if num_haystack > len(HAYSTACK):
            num_haystack = len(HAYSTACK)
            break
        num_haystack += incremental
    out = []
    for index in range(n):
        used = num_haystack
        while True:
            try:
                text, answer, query = io(used, k, v, nk, nv, nq)
                length = count(text) + 128
                assert length <= max_len
                break
            except Exception:
                if used > incremental:
                    used -= incremental
        prefix = (f"The special magic {v[:-1]} for {query} mentioned in the provided text is" if nq * nv == 1
                  else f"The special magic {v} for {query} mentioned in the provided text are")
        out.append(dict(index=index, max_length=max_len, outputs=answer, length=length, gen_prefix=prefix,
                        input_sha256=hashlib.sha256(text.encode()).hexdigest()))
    return out

TASKS = [("niah_single_2", "words", "numbers", 1, 1, 1), ("niah_single_3", "words", "uuids", 1, 1, 1),
         ("niah_multikey_1", "words", "numbers", 4, 1, 1), ("niah_multivalue", "words", "numbers", 1, 4, 1),
         ("niah_multiquery", "words", "numbers", 1, 1, 4)]
for task, k, v, nk, nv, nq in TASKS:
    random.seed(42)
    for l in (1024, 4096):
        for d in samples(l, 3, k, v, nk, nv, nq):
            print(json.dumps(dict(d, task=task)))
