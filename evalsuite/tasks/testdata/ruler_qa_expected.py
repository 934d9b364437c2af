# Re-derives the ruler_qa_hotpot documents that ruler_test.go expects, the
# way lm-eval's lm_eval/tasks/ruler/qa_utils.py generates them after
# `lm_eval --seed 42` (random.seed(42)), from the HotpotQA-layout rows of
# hotpot_dev_distractor_v1.json, with the stand-in tokenizer of
# ruler_expected.py (words plus one BOS token). Run here:
#   python3 ruler_qa_expected.py > ruler_qa_hotpot_expected.jsonl
import hashlib, json, random

TEMPLATE = """Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}"""
DOCUMENT_PROMPT = "Document {i}:\n{document}"

def count(text):
    return len(text.split()) + 1

def read_hotpotqa():
    data = json.load(open("hotpot_dev_distractor_v1.json"))
    total_docs = sorted(set(f"{t}\n{''.join(p)}" for d in data for t, p in d["context"]))
    total_docs_dict = {c: idx for idx, c in enumerate(total_docs)}
    total_qas = [{"query": d["question"], "outputs": [d["answer"]],
                  "context": [total_docs_dict[f"{t}\n{''.join(p)}"] for t, p in d["context"]]} for d in data]
    return total_qas, total_docs

def generate_input_output(index, num_docs, qas, docs):
    curr_q, curr_a, curr_docs = qas[index]["query"], qas[index]["outputs"], qas[index]["context"]
    curr_more = qas[index].get("more_context", [])
    if num_docs < len(docs):
        if (num_docs - len(curr_docs)) > len(curr_more):
            addition_docs = [i for i, d in enumerate(docs) if i not in curr_docs + curr_more]
            all_docs = curr_docs + curr_more + random.sample(addition_docs, max(0, num_docs - len(curr_docs) - len(curr_more)))
        else:
            all_docs = curr_docs + random.sample(curr_more, num_docs - len(curr_docs))
        all_docs = [docs[idx] for idx in all_docs]
    else:
        all_docs = docs
    random.Random(42).shuffle(all_docs)
    context = "\n\n".join([DOCUMENT_PROMPT.format(i=i + 1, document=d) for i, d in enumerate(all_docs)])
    return TEMPLATE.format(context=context, query=curr_q), curr_a

def generate_samples(docs, qas, max_seq_length, num_samples, tokens_to_generate=32, incremental=10):
    num_docs, total_tokens = incremental, 0
    while total_tokens + tokens_to_generate < max_seq_length:
        input_text, answer = generate_input_output(0, num_docs, qas=qas, docs=docs)
        total_tokens = count(input_text + f" {answer}")
        if total_tokens + tokens_to_generate > max_seq_length:
            num_docs -= incremental
            break
        num_docs += incremental
        if num_docs > len(docs):
            num_docs = len(docs)
            break
    out = []
    for index in range(num_samples):
        used_docs = num_docs
        while True:
            try:
                input_text, answer = generate_input_output(index, used_docs, qas=qas, docs=docs)
                length = count(input_text) + tokens_to_generate
                assert length <= max_seq_length
                break
            except Exception:
                if used_docs > incremental:
                    used_docs -= incremental
        out.append(dict(index=index, outputs=answer, length=length, max_length=max_seq_length, gen_prefix="Answer:",
                        input_sha256=hashlib.sha256(input_text.encode()).hexdigest(), documents=input_text.count("Document ")))
    return out

random.seed(42)
qas, docs = read_hotpotqa()
for seq in (900, 2048):
    for d in generate_samples(docs, qas, seq, 4):
        print(json.dumps(d))
