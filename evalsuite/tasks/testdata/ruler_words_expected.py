# Re-derives the niah_single_1 and niah_multikey_2 documents that
# ruler_test.go expects, the way lm-eval's lm_eval/tasks/ruler/
# prepare_niah.py generates them after `lm_eval --seed 42`, with the small
# word lists of wonderwords/ (in wonderwords' asset layout: one word a
# line, a hyphenated and a spaced adjective, a repeated one, a noun that
# makes two pairs spell alike) and the stand-in tokenizer of
# ruler_expected.py (words plus one BOS token). Run here:
#   python3 ruler_words_expected.py > ruler_words_expected.jsonl
import hashlib, json, random

def words(name):
    with open(f"wonderwords/{name}") as f:
        return [w.rstrip() for w in f.readlines()]
WORDS = sorted(list(set(f"{adj}-{noun}" for adj in words("adjectivelist.txt") for noun in words("nounlist.txt"))))
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
TEMPLATE = """Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"""
REPEAT = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

def count(text):
    return len(text.split()) + 1

def generate_random(t):
    if t == "numbers":
        return str(random.randint(10**6, 10**7 - 1))
    return random.choice(WORDS)

def io(num_haystack, type_haystack, type_needle_k="words", type_needle_v="numbers"):
    keys, values, needles = [], [], []
    keys.append(generate_random(type_needle_k))
    value = [generate_random(type_needle_v)]
    needles.append(NEEDLE.format(type_needle_v=type_needle_v, key=keys[-1], value=value[-1]))
    values.append(value)
    random.Random(42).shuffle(needles)
    if type_haystack == "repeat":
        sentences = [REPEAT] * num_haystack
    else:
        sentences = [NEEDLE.format(type_needle_v=type_needle_v, key=generate_random(type_needle_k), value=generate_random(type_needle_v)) for _ in range(num_haystack)]
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

def samples(max_len, n, type_haystack):
    incremental = 25 if max_len >= 4096 else 5
    num_haystack, total = incremental, 0
    while total + 128 < max_len:
        text, answer, _ = io(num_haystack, type_haystack)
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
                text, answer, query = io(used, type_haystack)
                length = count(text) + 128
                assert length <= max_len
                break
            except Exception:
                if used > incremental:
                    used -= incremental
        out.append(dict(index=index, max_length=max_len, outputs=answer, length=length,
                        gen_prefix=f"The special magic number for {query} mentioned in the provided text is",
                        input_sha256=hashlib.sha256(text.encode()).hexdigest()))
    return out

for task, haystack in (("niah_single_1", "repeat"), ("niah_multikey_2", "needle")):
    random.seed(42)
    for l in (600, 4096):
        for d in samples(l, 3, haystack):
            print(json.dumps(dict(d, task=task)))
