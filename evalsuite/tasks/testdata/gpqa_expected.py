# Re-derives the GPQA shuffles that gpqa_test.go expects for gpqa.csv, the
# way lm-eval's process_docs draws them after `--seed 42` (run here).
import csv, random
def pre(t):
    if t is None:
        return " "
    return t.strip().replace(" [title]", ". ").replace("  ", " ")
random.seed(42)
for row in csv.DictReader(open("gpqa.csv")):
    ch = [pre(row[k]) for k in ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer")]
    random.shuffle(ch)
    print(ch, "(%s)" % chr(65 + ch.index(pre(row["Correct Answer"]))))
