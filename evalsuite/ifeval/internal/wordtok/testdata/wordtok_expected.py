"""Records NLTK 3.9.1's word tokenizers for wordtok_test.go.

NLTK 3.9.1 is what lm-eval's IFEval requires (nltk>=3.9.1); Debian 12
ships 3.8, so run it from Debian 13's python3-nltk 3.9.1-2 unpacked
beside it, with the English punkt_tab parameters:
  PYTHONPATH=<nltk 3.9.1 dist-packages> NLTK_DATA=<folder with tokenizers/punkt_tab/english> \
    /usr/bin/python3 testdata/wordtok_expected.py > testdata/wordtok_expected.json
"""
import json
import random
import sys

import nltk
from nltk.tokenize import NLTKWordTokenizer, word_tokenize

assert nltk.__version__ == "3.9.1", nltk.__version__

TEXTS = [
    "Good muffins cost $3.88 (roughly 3,36 euros)\nin New York.  Please buy me\ntwo of them.\nThanks.",
    "They'll save and invest more. I can't believe it's not butter! Don't you think so?",
    "NASA's rover, the U.S.A. and the U.K. -- all CAPITALS -- SHOUT LOUDLY!!!",
    "\"Quoted,\" she said. 'Single quotes' and ``backticks'' and \u201ccurly\u201d \u2018ones\u2019.",
    "gonna wanna gotta gimme lemme cannot d'ye more'n 'tis 'twas whaddya whatcha",
    "GONNA WANNA CANNOT 'TIS 'TWAS Cannot",
    "Hello... world.... and so on .. etc.",
    "Prices: $5, 10%, #hashtag, @user & co; done: yes.",
    "Math: 3:45, 1,000,000 and 3.14159. End.",
    "Brackets [a] (b) {c} <d> and **bold** *italic* text.",
    "Mr. Smith met Dr. Jones at 5 p.m. on Jan. 5th. They talked.",
    "I'M HERE. YOU'RE THERE. WE'VE DONE IT. SHE'D GO. THEY'LL COME. ISN'T IT? I'D.",
    "rock 'n' roll, o'clock, y'all, ma'am, 'cause",
    "Tab\tseparated\ttext and  double  spaces\n\nand new lines.",
    "\u00abGuillemets\u00bb and \u201edeutsche\u201c quotes \u2014 with dashes \u2013 here.",
    "Emoji \U0001F600 and caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00dcBER STRASSE.",
    "Ends with a quote.\" Another one.' And a paren.) Last.]",
    "",
    "   ",
    "ALL CAPS WORDS LIKE THIS ARE COUNTED: A, I, OK, USA, HTTP.",
    "Mixed-CASE hyphen-ATED WORDS and CamelCase and snake_CASE.",
    "Numbers 123 and 4TH and 1ST and V2 and A1.",
    "P.S. I LOVE YOU. P.P.S ME TOO.",
    "*** Section 1 *** SECTION 2 ***",
]


def random_texts():
    rnd = random.Random(7)
    pieces = ["the", "THE", "The", "US", "U.S.", "it's", "IT'S", "can't", "CAN'T", "won't", "'s", "''", '"',
              "``", "(", ")", "[", "]", "--", "...", ".", ",", ":", ";", "!", "?", "'", "*", "@", "#", "$",
              "%", "&", "3.5", "1,000", "10:30", "e.g.", "Mr.", "DR.", "i.e.", "NASA", "ok", "Ok", "OK",
              "\u201c", "\u201d", "\u2018", "\u2019", "\u00ab", "\u00bb", "\u201e", "\u00e9t\u00e9", "\u00c9T\u00c9",
              "\n", "\n\n", "\t", " ", "  ", "gonna", "Cannot", "'tis", "more'n", "wanna ", "a", "I", "x"]
    out = []
    for _ in range(400):
        n = rnd.randint(1, 25)
        sep = rnd.choice(["", " ", " ", " "])
        out.append(sep.join(rnd.choice(pieces) for _ in range(n)))
    return out


def main():
    tok = NLTKWordTokenizer()
    out = []
    for t in TEXTS + random_texts():
        out.append({"text": t, "tokenize": tok.tokenize(t), "word_tokenize": word_tokenize(t)})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


main()
