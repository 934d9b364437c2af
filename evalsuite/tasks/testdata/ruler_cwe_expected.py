# Re-derives the ruler_cwe documents that ruler_test.go expects, the way
# lm-eval's lm_eval/tasks/ruler/cwe_utils.py generates them after
# `lm_eval --seed 42` (random.seed(42); the module's own RNG is
# random.Random(42) from import), with the small word lists of
# wonderwords/ and the stand-in tokenizer of ruler_expected.py (words
# plus one BOS token). Run here:
#   python3 ruler_cwe_expected.py > ruler_cwe_expected.jsonl
import hashlib, json, random

def words(name):
    with open(f"wonderwords/{name}") as f:
        return [w.rstrip() for w in f.readlines()]

CONFIG = {
    "template": """Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?""",
    "answer_prefix": """ Answer: The top 10 words that appear most often in the list are:""",
}
RNG = random.Random(42)
TEMPLATE = CONFIG["template"] + CONFIG["answer_prefix"]
WORDS = sorted(list(set([item for x in ["nounlist.txt", "adjectivelist.txt", "verblist.txt"] for item in words(x)])))
RNG.shuffle(WORDS)

def count(text):
    return len(text.split()) + 1

def get_example(num_words, common_repeats=30, uncommon_repeats=3, common_nums=10):
    word_list_full = random.sample(WORDS, num_words)
    common, uncommon = word_list_full[:common_nums], word_list_full[common_nums:]
    word_list = common * int(common_repeats) + uncommon * int(uncommon_repeats)
    RNG.shuffle(word_list)
    return " ".join([f"{i + 1}. {word}" for i, word in enumerate(word_list)]), common

def generate_input_output(num_words, max_seq_length, freq_cw=30, freq_ucw=3, num_cw=10):
    if max_seq_length < 4096:
        context_example, answer_example = get_example(20, 3, 1, num_cw)
        context, answer = get_example(num_words, 6, 1, num_cw)
    else:
        context_example, answer_example = get_example(40, 10, 3, num_cw)
        context, answer = get_example(num_words, freq_cw, freq_ucw, num_cw)
    input_example = TEMPLATE.format(context=context_example, query="") + " ".join([f"{i + 1}. {word}" for i, word in enumerate(answer_example)])
    return input_example, TEMPLATE.format(context=context, query=""), answer

def sys_word_pair_random(num_samples, max_seq_length, incremental=10, tokens_to_generate=120):
    num_words, total_tokens = incremental, 0
    while total_tokens + tokens_to_generate < max_seq_length:
        input_example, input_text, answer = generate_input_output(num_words, max_seq_length)
        total_tokens = count(input_example + "\n" + input_text + " " + " ".join([f"{i + 1}. {word}" for i, word in enumerate(answer)]))
        if total_tokens + tokens_to_generate > max_seq_length:
            num_words -= incremental
            break
        num_words += incremental
        if num_words > len(WORDS):
            num_words = len(WORDS)
            break
    out = []
    for index in range(num_samples):
        used_words = num_words
        while True:
            try:
                input_example, input_text, answer = generate_input_output(used_words, max_seq_length)
                length = count(input_text) + tokens_to_generate
                assert length <= max_seq_length
                break
            except Exception:
                if used_words > incremental:
                    used_words -= incremental
        text = input_text[: input_text.rfind(CONFIG["answer_prefix"])].strip()
        out.append(dict(index=index, outputs=answer, length=length, max_length=max_seq_length,
                        gen_prefix=CONFIG["answer_prefix"].strip(), input_sha256=hashlib.sha256(text.encode()).hexdigest()))
    return out

random.seed(42)
for seq in (600, 4096):
    for d in sys_word_pair_random(3, seq):
        print(json.dumps(d))
