# Re-derives the ruler_fwe documents that ruler_test.go expects, the way
# lm-eval's lm_eval/tasks/ruler/fwe_utils.py generates them after
# `lm_eval --seed 42` (random.seed(42)), with the stand-in tokenizer of
# ruler_expected.py (words plus one BOS token). numpy and scipy are not
# needed: k ** -2.0 is CPython's libm pow, as numpy's power calls it, and
# zeta(2.0) is scipy's documented value. Run here:
#   python3 ruler_fwe_expected.py > ruler_fwe_expected.jsonl
import hashlib, json, random, string

ZETA2 = 1.6449340668482266  # scipy.special.zeta(2)
CONFIG = {
    "template": """Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?""",
    "answer_prefix": """ Answer: According to the coded text above, the three most frequently appeared words are:""",
}
TEMPLATE = CONFIG["template"] + CONFIG["answer_prefix"]

def count(text):
    return len(text.split()) + 1

def generate_input_output(max_len, num_words=-1, coded_wordlen=6, vocab_size=2000, incremental=10, alpha=2.0):
    vocab = ["".join(random.choices(string.ascii_lowercase, k=coded_wordlen)) for _ in range(vocab_size)]
    while len(set(vocab)) < vocab_size:
        vocab.append("".join(random.choices(string.ascii_lowercase, k=coded_wordlen)))
    vocab = sorted(list(set(vocab)))
    random.Random(42).shuffle(vocab)
    vocab[0] = "..."
    def gen_text(num_words):
        cnt = [int(num_words * (k ** -alpha) / ZETA2) for k in range(1, len(vocab) + 1)]
        sampled_words = [x for w, zi in zip(vocab, cnt) for x in [w] * zi]
        random.Random(42).shuffle(sampled_words)
        return TEMPLATE.format(context=" ".join(sampled_words), query=""), vocab[1:4]
    if num_words > 0:
        text, answer = gen_text(num_words)
        while count(text) > max_len:
            num_words -= incremental
            text, answer = gen_text(num_words)
    else:
        num_words = max_len // coded_wordlen
        text, answer = gen_text(num_words)
        while count(text) < max_len:
            num_words += incremental
            text, answer = gen_text(num_words)
        num_words -= incremental
    text, answer = gen_text(num_words)
    return text, answer, num_words

def sys_kwext(max_seq_length, num_samples):
    vocab_size = max_seq_length // 50
    _, _, num_example_words = generate_input_output(max_seq_length, vocab_size=vocab_size, incremental=max_seq_length // 32)
    out = []
    for index in range(num_samples):
        input_text, answer, _ = generate_input_output(max_seq_length, num_words=num_example_words, vocab_size=vocab_size, incremental=max_seq_length // 32)
        length = count(input_text) + 50
        text = input_text[: input_text.rfind(CONFIG["answer_prefix"])].strip()
        out.append(dict(index=index, outputs=answer, length=length, max_length=max_seq_length,
                        gen_prefix=CONFIG["answer_prefix"].strip(), input_sha256=hashlib.sha256(text.encode()).hexdigest()))
    return out

random.seed(42)
for seq in (1024, 4096):
    for d in sys_kwext(seq, 3):
        print(json.dumps(d))
