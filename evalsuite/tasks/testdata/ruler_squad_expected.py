# Builds a small SQuAD 2.0 dev set in its original nested JSON shape, writes
# it flattened the way the Hub copy rajpurkar/squad_v2 lays it out (one row
# per question: id, title, context, question, answers{text, answer_start};
# an impossible question has empty answer lists) to
# squad_v2_validation.jsonl, and re-derives the ruler_qa_squad documents
# that ruler_test.go expects the way lm-eval's lm_eval/tasks/ruler/
# qa_utils.py (read_squad, generate_samples) generates them from the
# nested JSON after `lm_eval --seed 42`, with the stand-in tokenizer of
# ruler_expected.py (words plus one BOS token). Run here:
#   python3 ruler_squad_expected.py > ruler_qa_squad_expected.jsonl
import hashlib, json, random

rnd = random.Random(3)
words = "the was a of in and first published city river founded known his her which by as an on from at for with".split()
data = {"version": "v2.0", "data": []}
qid = 0
for a, title in enumerate(["Normans", "Computational_complexity_theory", "Southern_California"]):
    art = {"title": title, "paragraphs": []}
    for p in range(5):
        ctx = " ".join(rnd.choice(words) for _ in range(rnd.randint(18, 30))).capitalize() + f" {title} part {p}."
        qas = []
        for q in range(2):
            qid += 1
            impossible = (qid % 3 == 0)
            ans = [] if impossible else [{"text": f"{title} part {p}", "answer_start": len(ctx) - len(f"{title} part {p}.")},
                                         {"text": f"part {p}", "answer_start": len(ctx) - len(f"part {p}.")}]
            qas.append({"question": f"Which part of {title} is paragraph {p} (question {q})?", "id": "56ddde6b9a695914005b96%02d" % qid,
                        "answers": ans, "is_impossible": impossible})
        art["paragraphs"].append({"qas": qas, "context": ctx})
    data["data"].append(art)

with open("squad_v2_validation.jsonl", "w") as f:
    for art in data["data"]:
        for p in art["paragraphs"]:
            for q in p["qas"]:
                f.write(json.dumps({"id": q["id"], "title": art["title"], "context": p["context"], "question": q["question"],
                                    "answers": {"text": [x["text"] for x in q["answers"]], "answer_start": [x["answer_start"] for x in q["answers"]]}}) + "\n")

TEMPLATE = """Answer the question based on the given documents. Only give me the answer and do not output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}"""
DOCUMENT_PROMPT = "Document {i}:\n{document}"

def count(text):
    return len(text.split()) + 1

def read_squad():
    total_docs = [p["context"] for d in data["data"] for p in d["paragraphs"]]
    total_docs = sorted(set(total_docs))
    total_docs_dict = {c: idx for idx, c in enumerate(total_docs)}
    total_qas = []
    for d in data["data"]:
        more_docs = [total_docs_dict[p["context"]] for p in d["paragraphs"]]
        for p in d["paragraphs"]:
            for qas in p["qas"]:
                if not qas["is_impossible"]:
                    total_qas.append({"query": qas["question"], "outputs": [a["text"] for a in qas["answers"]],
                                      "context": [total_docs_dict[p["context"]]],
                                      "more_context": [idx for idx in more_docs if idx != total_docs_dict[p["context"]]]})
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
qas, docs = read_squad()
for seq in (420, 1024):
    for d in generate_samples(docs, qas, seq, 4):
        print(json.dumps(d))
