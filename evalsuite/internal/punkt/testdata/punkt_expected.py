"""Re-derives punkt_expected.json with Python NLTK's Punkt sentence tokenizer.

Run from this folder: python3 punkt_expected.py (checked with Debian 12's
python3-nltk 3.8). It writes two punkt_tab parameter folders, hand/ (made
up here) and trained/ (what PunktTrainer learns from train.txt), reads
them back as NLTK 3.9's load_punkt_params decodes punkt_tab files, and
records PunktSentenceTokenizer(params).tokenize(text) for every text.
"""

import json
import os
import random
from collections import defaultdict

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer, PunktTrainer

HAND = {
    "abbrev_types": ["mr", "mrs", "dr", "st", "u.s", "e.g", "i.e", "etc", "inc", "vs", "no", "jan", "ph.d", "approx", "fig"],
    "collocations": [("##number##", "mio"), ("s", "bach"), ("st", "louis"), ("j", "smith")],
    "sent_starters": ["but", "and", "the", "in", "it", "however", "this", "we"],
    # type -> orthographic context flags (BEG_UC 2, MID_UC 4, UNK_UC 8, BEG_LC 16, MID_LC 32, UNK_LC 64)
    "ortho_context": {"the": 2 | 32, "but": 2 | 32, "smith": 4, "bach": 4 | 8, "louis": 4, "apple": 4 | 32,
                      "it": 2 | 32 | 16, "we": 2, "paris": 4 | 8, "and": 32, "however": 2 | 32, "new": 2 | 4 | 32,
                      "in": 2 | 32, "this": 2 | 32, "company": 32 | 64, "john": 4, "ltd": 4},
}


def write_params(folder, abbrevs, collocs, starters, ortho):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "abbrev_types.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(abbrevs)) + "\n")
    with open(os.path.join(folder, "collocations.tab"), "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(a + "\t" + b for a, b in collocs)) + "\n")
    with open(os.path.join(folder, "sent_starters.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(starters)) + "\n")
    with open(os.path.join(folder, "ortho_context.tab"), "w", encoding="utf-8") as f:
        f.write("\n".join(f"{k}\t{v}" for k, v in sorted(ortho.items())) + "\n")


def rm_nl(s):
    return s[:-1] if s[-1] == "\n" else s


def load_params(folder):
    """NLTK 3.9's load_punkt_params with tabdata's PunktDecoder."""
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


TEXTS = [
    "",
    "   ",
    "Hello world.",
    "Hello world. This is a test.",
    "Mr. Smith went to Washington. He arrived on Jan. 5. The weather was fine.",
    "Dr. Who? Yes! It is I... the Doctor. And then?",
    "She said \"Stop.\" Then she left. (This is quoted.) Next one.",
    "He lives in the U.S. But not for long.",
    "He lives in the U.S. and Canada.",
    "J. S. Bach wrote music. J. Smith did not.",
    "The price is 5.5 mio. dollars. It grew 3. in 2020.",
    "See fig. 3 for details. See e.g. the appendix. That is i.e. wrong.",
    "Wait... what? No!! Really?! OK.",
    "Numbers: 1. First item. 2. Second item.",
    "The end.\n\nA new paragraph starts here. Another sentence.\nNew line here.",
    "Quotes at the end.' Then more. \"Double.\" (Paren.) [Bracket.] {Brace.}",
    "Dashes.-- Next.  Spaces.   Lots of them.\tTabs.\tToo.",
    "A sentence ending in ellipsis . . . and continuing. Another . . . . Done.",
    "Don't split at St. Louis. Visit St. Peter's. The Ph.D. was hard. The company Inc. Ltd. Apple.",
    "Was it Mr. T? Yes. it was.",
    "weird.spacing.here. And more.text",
    "Ends with a closer.)  Then (more).' And 'quote.' x",
    "Über alles. Ärger folgt. éclair. Ωmega. İstanbul. ΣΑΣ. Σ.",
    "Trailing whitespace sentence.   \n\n  ",
    "Commas, after words, and, numbers 1,000. 2,000.5 is big. -3. is negative.",
    "Tab\u00a0space. NBSP\u2003em-space. Line\u2028sep. Unit\x1fsep. End.",
    "One sentence only without end",
    "?!. ... . .",
    "\"Quoted start.\" \"Another.\"",
    "This is it.'' And then.)) Final.]]] End.",
    "A.B.C. are letters. x.y. is lower. X. is alone.",
    "Apple. apple. APPLE. Paris. paris. New. new. However. however.",
    "It's 5 p.m. now. We'll go at 6 a.m. tomorrow.",
    "End of text with quote.\"",
    "Mr.\nSmith. Dr.\n\nWho.",
]


def random_texts(n, seed):
    rnd = random.Random(seed)
    pieces = ["Mr", "mr", "Dr", "U.S", "e.g", "The", "the", "But", "it", "It", "Smith", "Bach", "J", "S", "5", "3.5",
              "1,000", "apple", "Apple", "Paris", "no", "No", "etc", "St", "Louis", "We", "new", "New", "-", "--", "x"]
    punct = [".", ".", ".", "?", "!", "...", ". . .", ",", ";", ":", "'", "\"", ")", "(", "]", "[", "}", "{", "", "", "", ".'", ".\"", ".)", "?!"]
    spaces = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\u00a0", "\r\n", ""]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 30)):
            parts.append(rnd.choice(pieces) + rnd.choice(punct) + rnd.choice(spaces))
        out.append("".join(parts))
    return out


def char_texts(n, seed):
    """Texts drawn a character at a time, to stress the word and period scanners."""
    rnd = random.Random(seed)
    alphabet = list("aAbBsSjJ.?!,;:'\"()[]{}-*@&#`%_0123456789 \n\t") + ["\u00a0", "\u2003", "\x1c", "\r", "\u00c9", "\u00e9", "\u0130", "\u03a3", "\u00bd", "\u0663", "\u02b0"]
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 80))) for _ in range(n)]


def main():
    write_params("hand", HAND["abbrev_types"], HAND["collocations"], HAND["sent_starters"], HAND["ortho_context"])
    with open("train.txt", encoding="utf-8") as f:
        train = f.read()
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    trainer.train(train, finalize=True)
    tp = trainer.get_params()
    write_params("trained", tp.abbrev_types, tp.collocations, tp.sent_starters, dict(tp.ortho_context))
    texts = TEXTS + random_texts(300, 42) + char_texts(400, 7)
    train_paras = [p for p in train.split("\n\n") if p.strip()]
    cases = []
    for name in ["hand", "trained"]:
        tok = PunktSentenceTokenizer(load_params(name))
        for t in texts + train_paras + [train]:
            cases.append({"params": name, "text": t, "sentences": tok.tokenize(t)})
    with open("punkt_expected.json", "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
