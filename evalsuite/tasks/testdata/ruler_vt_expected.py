# Re-derives the ruler_vt documents that ruler_test.go expects, the way
# lm-eval's lm_eval/tasks/ruler/vt_utils.py generates them after
# `lm_eval --seed 42` (random.seed(42) and np.random.seed(42)), with the
# stand-in tokenizer of ruler_expected.py (words plus one BOS token).
# numpy is not needed: its legacy global generator is the same MT19937
# seeded by init_genrand alone, emulated here with CPython's own generator
# put in that state, and randint(10000, 99999) masks 32-bit draws to 17
# bits and redraws above 89998. Run here:
#   python3 ruler_vt_expected.py > ruler_vt_expected.jsonl
import hashlib, json, random, string

def count(text):
    return len(text.split()) + 1

def np_legacy(seed):
    mt = [seed]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xffffffff)
    r = random.Random()
    r.setstate((3, tuple(mt) + (624,), None))
    return r

def np_randint(low, high):
    rng = high - 1 - low
    mask = (1 << rng.bit_length()) - 1
    while True:
        v = NP.getrandbits(32) & mask
        if v <= rng:
            return low + v

CONFIG = {
    "template": """Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\nQuestion: Find all variables that are assigned the value {query} in the text above.""",
    "answer_prefix": """ Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are assgined the value {query}, they are: """,
}
TEMPLATE = CONFIG["template"] + CONFIG["answer_prefix"]

def generate_chains(num_chains, num_hops, is_icl=False):
    k = 5 if not is_icl else 3
    num_hops = num_hops if not is_icl else min(10, num_hops)
    vars_all = ["".join(random.choices(string.ascii_uppercase, k=k)).upper() for _ in range((num_hops + 1) * num_chains)]
    while len(set(vars_all)) < num_chains * (num_hops + 1):
        vars_all.append("".join(random.choices(string.ascii_uppercase, k=k)).upper())
    vars_ret, chains_ret = [], []
    for i in range(0, len(vars_all), num_hops + 1):
        this_vars = vars_all[i : i + num_hops + 1]
        vars_ret.append(this_vars)
        this_chain = [f"VAR {this_vars[0]} = {np_randint(10000, 99999)}"]
        for j in range(num_hops):
            this_chain.append(f"VAR {this_vars[j + 1]} = VAR {this_vars[j]} ")
        chains_ret.append(this_chain)
    return vars_ret, chains_ret

def generate_input_output(num_noises, num_chains, num_hops, is_icl=False):
    vars, chains = generate_chains(num_chains, num_hops, is_icl=is_icl)
    noise = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
    sentences = [noise] * num_noises
    if len(sentences) <= len(chains[0]):
        sentences = [n + "." if len(n.strip()) > 0 else n for n in [x for noise in sentences for x in noise.split(".")]]
        if not len(sentences) > len(chains[0]):
            chains = [chain[: len(sentences) - 1] for chain in chains]
    for chain_i in chains:
        positions = list(sorted(random.sample(range(len(sentences)), len(chain_i))))
        for insert_pi, j in zip(positions, range(len(chain_i))):
            sentences.insert(insert_pi + j, chain_i[j])
    context = " ".join(sentences).replace(". \n", ".\n")
    value = chains[0][0].split("=")[-1].strip()
    return TEMPLATE.format(context=context, query=value, num_v=num_hops + 1), vars[0]

def randomize_icl(icl_example):
    cut = icl_example.index(CONFIG["answer_prefix"][-10:])
    for item in icl_example[cut + 10 :].strip().split():
        icl_example = icl_example.replace(item, "".join(random.choices(string.ascii_uppercase, k=len(item))).upper())
    return icl_example

def sys_vartrack(num_samples, max_seq_length, incremental=10, icl_example=None):
    num_noises, total_tokens, example_tokens = incremental, 0, 0
    if icl_example is not None:
        icl_example = icl_example["input"] + " " + " ".join(icl_example["outputs"]) + "\n\n"
        example_tokens = count(icl_example)
    is_icl = icl_example is None
    while total_tokens + 30 + example_tokens < max_seq_length:
        input_text, answer = generate_input_output(num_noises, 1, 4, is_icl=is_icl)
        total_tokens = count(input_text + f" {answer}")
        if total_tokens + 30 + example_tokens > max_seq_length:
            num_noises -= incremental
            break
        num_noises += incremental
    out = []
    for index in range(num_samples):
        used = num_noises
        while True:
            try:
                input_text, answer = generate_input_output(used, 1, 4, is_icl=is_icl)
                length = count(input_text) + 30 + example_tokens
                assert length <= max_seq_length
                break
            except Exception:
                if used > incremental:
                    used -= incremental
        if icl_example is not None:
            cutoff = input_text.index(CONFIG["template"][:20])
            input_text = input_text[:cutoff] + randomize_icl(icl_example) + "\n\n" + input_text[cutoff:]
        gpi = input_text.rfind(" Answer: According to the chain(s) of variable assignment")
        gen_prefix = input_text[gpi:].strip()
        if icl_example is not None:
            input_text = input_text[:gpi]
        out.append(dict(index=index, input=input_text, outputs=answer, length=length, max_length=max_seq_length, gen_prefix=gen_prefix))
    return out

random.seed(42)
NP = np_legacy(42)
for seq in (1024, 4096):
    icl = sys_vartrack(1, 500, incremental=5)[0]
    for d in sys_vartrack(3, seq, icl_example=icl):
        text = d.pop("input")
        d["input_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        print(json.dumps(d))
