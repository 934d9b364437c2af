# Re-derives the niah_multikey_3 documents that ruler_test.go expects, the
# way lm-eval's lm_eval/tasks/ruler/prepare_niah.py generates them after
# `lm_eval --seed 42` (random.seed(42)), with a stand-in tokenizer that
# counts whitespace-separated words plus one BOS token. Only the needle
# haystack path of generate_input_output/generate_samples is exercised
# (uuid keys and values, one needle, one query). Run here:
#   python3 ruler_expected.py > ruler_niah_multikey_3_expected.jsonl
import hashlib, json, random, uuid

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
TEMPLATE = """Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"""

def count(text):
    return len(text.split()) + 1

def gen_uuid():
    return str(uuid.UUID(int=random.getrandbits(128), version=4))

def io(num_haystack, type_needle_v="uuids"):
    keys, values, needles = [], [], []
    for _ in range(1):
        keys.append(gen_uuid())
        value = []
        for _ in range(1):
            value.append(gen_uuid())
            needles.append(NEEDLE.format(type_needle_v=type_needle_v, key=keys[-1], value=value[-1]))
        values.append(value)
    random.Random(42).shuffle(needles)
    sentences = [NEEDLE.format(type_needle_v=type_needle_v, key=gen_uuid(), value=gen_uuid()) for _ in range(num_haystack)]
    indexes = sorted(random.sample(range(num_haystack), len(needles)), reverse=True)
    for index, element in zip(indexes, needles):
        sentences.insert(index, element)
    context = "\n".join(sentences)
    indices = random.sample(range(1), 1)
    queries = [keys[i] for i in indices]
    answers = [a for i in indices for a in values[i]]
    query = queries[0]
    template = TEMPLATE.replace("Some", "A").replace("are all", "is").replace("are", "is").replace("answers", "answer")
    return template.format(type_needle_v=type_needle_v[:-1], context=context, query=query), answers, query

def samples(max_len, n):
    incremental = 25 if max_len >= 4096 else 5
    num_haystack, total = incremental, 0
    while total + 128 < max_len:
        text, answer, _ = io(num_haystack)
        total = count(text + " ".join(answer))
        if total + 128 > max_len:
            num_haystack -= incremental
            break
        num_haystack += incremental
    out = []
    for index in range(n):
        used = num_haystack
        while True:
            try:
                text, answer, query = io(used)
                length = count(text) + 128
                assert length <= max_len
                break
            except Exception:
                if used > incremental:
                    used -= incremental
        out.append(dict(index=index, max_length=max_len, outputs=answer, length=length,
                        gen_prefix=f"The special magic uuid for {query} mentioned in the provided text is",
                        input_sha256=hashlib.sha256(text.encode()).hexdigest(), lines=text.count("\n")))
    return out

random.seed(42)
for l in (400, 4096):
    for d in samples(l, 3):
        print(json.dumps(d))
