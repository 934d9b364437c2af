# Re-derives the GPQA shuffles that gpqa_test.go expects for gpqa.csv, the
# way the process_docs of tt-inference-server's lm-eval fork draws them
# after `--seed 42` (run here).
import csv, random, re
def pre(t):
    if t is None:
        return " "
    t = t.strip().replace(" [title]", ". ")
    t = re.sub("\\[.*?\\]", "", t)
    return t.replace("  ", " ")
random.seed(42)
for row in csv.DictReader(open("gpqa.csv")):
    ch = [pre(row[k]) for k in ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer")]
    random.shuffle(ch)
    print(ch, "(%s)" % chr(65 + ch.index(pre(row["Correct Answer"]))))

# The 2-shot gpqa_diamond_generative_n_shot prompt of the second row
# (golden/gpqa_diamond_generative_n_shot.txt up to the first "---"): lm-eval
# samples num_fewshot+1 docs per evaluated doc, in order, from
# random.Random(fewshot_seed=42), and drops the evaluated doc itself.
random.seed(42)
docs = []
for row in csv.DictReader(open("gpqa.csv")):
    ch = [pre(row[k]) for k in ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer")]
    random.shuffle(ch)
    docs.append(dict(row, choices=ch, answer="(%s)" % chr(65 + ch.index(pre(row["Correct Answer"])))))
def text(d):
    return "Question: " + d["Question"] + "\nChoices:\n" + "".join("(%s) %s\n" % (chr(65 + i), c) for i, c in enumerate(d["choices"])) + "Answer:"
fs = random.Random(42)
for d in docs[:2]:
    ex = [x for x in fs.sample(docs, 3) if x != d][:2]
    ctx = ("Here are some example questions from experts. Answer the final question yourself, following the format of the previous questions exactly.\n"
           + "".join(text(e) + " " + e["answer"] + "\n\n" for e in ex) + text(d))
golden = open("golden/gpqa_diamond_generative_n_shot.txt").read().split("\n--- ")[0]
print("generative_n_shot prompt matches" if ctx == golden else "MISMATCH:\n" + ctx)
