"""Records Python langdetect's answers for langdetect_test.go.

Run with Debian's python3-langdetect (1.0.9) on CPython 3.11:
  /usr/bin/python3 testdata/langdetect_expected.py > testdata/langdetect_expected.json

Each text is detected with DetectorFactory.seed set (0, 1 and 42), the
profiles loaded in file-name order as the Go port loads them. The output
records detect_langs' languages and probabilities (repr, so the Go test
compares every bit) or the exception.
"""
import json
import os
import random
import sys

from langdetect import DetectorFactory, LangDetectException, PROFILES_DIRECTORY

TEXTS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "this is all lower case english text about the weather today",
    "THIS IS ALL CAPITAL ENGLISH TEXT ABOUT THE WEATHER TODAY",
    "Le renard brun rapide saute par-dessus le chien paresseux pr\u00e8s de la rivi\u00e8re.",
    "Der schnelle braune Fuchs springt \u00fcber den faulen Hund am Flussufer.",
    "El r\u00e1pido zorro marr\u00f3n salta sobre el perro perezoso junto al r\u00edo.",
    "A r\u00e1pida raposa marrom pula sobre o c\u00e3o pregui\u00e7oso perto do rio.",
    "La volpe marrone veloce salta sopra il cane pigro vicino al fiume.",
    "De snelle bruine vos springt over de luie hond bij de rivier.",
    "Szybki br\u0105zowy lis przeskakuje nad leniwym psem przy rzece.",
    "\u0411\u044b\u0441\u0442\u0440\u0430\u044f \u043a\u043e\u0440\u0438\u0447\u043d\u0435\u0432\u0430\u044f \u043b\u0438\u0441\u0430 \u043f\u0435\u0440\u0435\u043f\u0440\u044b\u0433\u0438\u0432\u0430\u0435\u0442 \u0447\u0435\u0440\u0435\u0437 \u043b\u0435\u043d\u0438\u0432\u0443\u044e \u0441\u043e\u0431\u0430\u043a\u0443.",
    "\u0428\u0432\u0438\u0434\u043a\u0430 \u0440\u0443\u0434\u0430 \u043b\u0438\u0441\u0438\u0446\u044f \u0441\u0442\u0440\u0438\u0431\u0430\u0454 \u0447\u0435\u0440\u0435\u0437 \u043b\u0456\u043d\u0438\u0432\u043e\u0433\u043e \u0441\u043e\u0431\u0430\u043a\u0430.",
    "\u0411\u044a\u0440\u0437\u0430\u0442\u0430 \u043a\u0430\u0444\u044f\u0432\u0430 \u043b\u0438\u0441\u0438\u0446\u0430 \u043f\u0440\u0435\u0441\u043a\u0430\u0447\u0430 \u043c\u044a\u0440\u0437\u0435\u043b\u0438\u0432\u043e\u0442\u043e \u043a\u0443\u0447\u0435.",
    "\u0627\u0644\u062b\u0639\u0644\u0628 \u0627\u0644\u0628\u0646\u064a \u0627\u0644\u0633\u0631\u064a\u0639 \u064a\u0642\u0641\u0632 \u0641\u0648\u0642 \u0627\u0644\u0643\u0644\u0628 \u0627\u0644\u0643\u0633\u0648\u0644.",
    "\u0631\u0648\u0628\u0627\u0647 \u0642\u0647\u0648\u0647 \u0627\u06cc \u0633\u0631\u06cc\u0639 \u0627\u0632 \u0631\u0648\u06cc \u0633\u06af \u062a\u0646\u0628\u0644 \u0645\u06cc \u067e\u0631\u062f.",
    "\u0924\u0947\u091c\u093c \u092d\u0942\u0930\u0940 \u0932\u094b\u092e\u0921\u093c\u0940 \u0906\u0932\u0938\u0940 \u0915\u0941\u0924\u094d\u0924\u0947 \u0915\u0947 \u090a\u092a\u0930 \u0915\u0942\u0926\u0924\u0940 \u0939\u0948\u0964",
    "\u09a6\u09cd\u09b0\u09c1\u09a4 \u09ac\u09be\u09a6\u09be\u09ae\u09c0 \u09b6\u09bf\u09af\u09bc\u09be\u09b2 \u0985\u09b2\u09b8 \u0995\u09c1\u0995\u09c1\u09b0\u09c7\u09b0 \u0989\u09aa\u09b0 \u09a6\u09bf\u09af\u09bc\u09c7 \u09b2\u09be\u09ab \u09a6\u09c7\u09af\u09bc\u0964",
    "\u0e2a\u0e38\u0e19\u0e31\u0e02\u0e08\u0e34\u0e49\u0e07\u0e08\u0e2d\u0e01\u0e2a\u0e35\u0e19\u0e49\u0e33\u0e15\u0e32\u0e25\u0e01\u0e23\u0e30\u0e42\u0e14\u0e14\u0e02\u0e49\u0e32\u0e21\u0e2a\u0e38\u0e19\u0e31\u0e02\u0e02\u0e35\u0e49\u0e40\u0e01\u0e35\u0e22\u0e08",
    "\u7d20\u65e9\u3044\u8336\u8272\u306e\u72d0\u304c\u6020\u3051\u8005\u306e\u72ac\u3092\u98db\u3073\u8d8a\u3048\u307e\u3059\u3002",
    "\u654f\u6377\u7684\u68d5\u8272\u72d0\u72f8\u8df3\u8fc7\u4e86\u61d2\u60f0\u7684\u72d7\u3002",
    "\u654f\u6377\u7684\u68d5\u8272\u72d0\u72f8\u8df3\u904e\u4e86\u61f6\u60f0\u7684\u72d7\u3002",
    "\ube60\ub978 \uac08\uc0c9 \uc5ec\uc6b0\uac00 \uac8c\uc73c\ub978 \uac1c\ub97c \ub6f0\uc5b4\ub118\uc2b5\ub2c8\ub2e4.",
    "\u05d4\u05e9\u05d5\u05e2\u05dc \u05d4\u05d7\u05d5\u05dd \u05d4\u05de\u05d4\u05d9\u05e8 \u05e7\u05d5\u05e4\u05e5 \u05de\u05e2\u05dc \u05d4\u05db\u05dc\u05d1 \u05d4\u05e2\u05e6\u05dc\u05df.",
    "\u0393\u03c1\u03ae\u03b3\u03bf\u03c1\u03b7 \u03ba\u03b1\u03c6\u03ad \u03b1\u03bb\u03b5\u03c0\u03bf\u03cd \u03c0\u03b7\u03b4\u03ac\u03b5\u03b9 \u03c0\u03ac\u03bd\u03c9 \u03b1\u03c0\u03cc \u03c4\u03bf\u03bd \u03c4\u03b5\u03bc\u03c0\u03ad\u03bb\u03b7 \u03c3\u03ba\u03cd\u03bb\u03bf.",
    "Con c\u00e1o n\u00e2u nhanh nh\u1eb9n nh\u1ea3y qua con ch\u00f3 l\u01b0\u1eddi bi\u1ebfng.",
    "Con ca\u0301o n\u00e2u nhanh nhe\u0323n nha\u0309y qua con cho\u0301 l\u01b0\u01a1\u0300i bi\u00ea\u0301ng.",
    "Nopea ruskea kettu hypp\u00e4\u00e4 laiskan koiran yli joen rannalla.",
    "Den snabba bruna r\u00e4ven hoppar \u00f6ver den lata hunden vid floden.",
    "Den hurtige brune r\u00e6v hopper over den dovne hund ved floden.",
    "Rychl\u00e1 hn\u011bd\u00e1 li\u0161ka sk\u00e1\u010de p\u0159es l\u00edn\u00e9ho psa u \u0159eky.",
    "H\u0131zl\u0131 kahverengi tilki tembel k\u00f6pe\u011fin \u00fczerinden atlar.",
    "Mbweha mwepesi wa kahawia anaruka juu ya mbwa mvivu karibu na mto.",
    "Ang mabilis na kayumangging soro ay tumalon sa tamad na aso.",
    "Rubah coklat yang cepat melompati anjing yang malas di tepi sungai.",
    "A gyors barna r\u00f3ka \u00e1tugrik a lusta kutya felett a foly\u00f3 partj\u00e1n.",
    "Vulpea maro rapid\u0103 sare peste c\u00e2inele lene\u0219 l\u00e2ng\u0103 r\u00e2u \u0219i \u021bar\u0103.",
    "Y llwynog brown cyflym yn neidio dros y ci diog ger yr afon.",
    "Die vinnige bruin jakkals spring oor die lui hond by die rivier.",
    "hello",
    "ok",
    "a",
    "Bonjour",
    "Hola amigo",
    "NASA ESA CERN",
    "1234 5678 !!! ??? ...",
    "",
    "   ",
    "http://example.com/path?x=1 https://www.test.org/a#b",
    "contact me at john.doe@example.com or jane_roe@mail.server.co.uk please",
    "Visit https://en.wikipedia.org/wiki/Fox for more about foxes and dogs.",
    "a@b x@yz hello@w. @@@ foo@bar.baz.",
    "Das ist ein Satz mit English words mixed in zwischen den deutschen.",
    "Je pense que this is a mixed sentence avec des mots fran\u00e7ais.",
    "\u0645\u0631\u062d\u0628\u0627 hello \u0645\u0631\u062d\u0628\u0627 \u0628\u0643\u0645 world",
    "\u3053\u3093\u306b\u3061\u306f\u3001\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3002",
    "\u3105\u3106\u3107\u3108 \u31a0\u31a1",
    "\u201cQuoted\u201d \u2014 text \u2026 with general punctuation\u2019s marks.",
    "\u00a0\u00abGuillemets\u00bb et degr\u00e9s 30\u00b0 dans le texte fran\u00e7ais.",
    "Ortografia rom\u00e2neasc\u0103: \u0219coal\u0103, \u021bar\u0103, \u015fcoal\u0103, \u0163ar\u0103.",
    "\u1ea0\u1ea1\u1ea2\u1ea3 \u1e00\u1e01 Latin Extended Additional letters \u1ec3\u1ec3",
]


def seeded_texts():
    rnd = random.Random(2024)
    alphabet = "abcdefghijklmnopqrstuvwxyz     \u00e9\u00e8\u00e0\u00fc\u00f6\u00e4\u00df\u00e7\u0441\u0442\u043e\u0430\u03b1\u03b2\u4e00\u4e8c\u3042\u0627\u0644ABCXYZ.,!?-"
    out = []
    for _ in range(60):
        n = rnd.randint(1, 80)
        out.append("".join(rnd.choice(alphabet) for _ in range(n)))
    words = TEXTS[:40]
    for _ in range(30):
        a, b = rnd.sample(words, 2)
        out.append(a[: rnd.randint(1, len(a))] + " " + b[: rnd.randint(1, len(b))])
    return out


def factory(seed):
    f = DetectorFactory()
    names = sorted(n for n in os.listdir(PROFILES_DIRECTORY) if not n.startswith("."))
    profiles = []
    for n in names:
        with open(os.path.join(PROFILES_DIRECTORY, n), encoding="utf-8") as fh:
            profiles.append(fh.read())
    f.load_json_profile(profiles)
    f.seed = seed
    return f


def main():
    texts = TEXTS + seeded_texts()
    texts.append(" ".join(TEXTS[:30]) * 12)  # beyond 10,000 characters
    out = []
    for seed in (0, 1, 42):
        f = factory(seed)
        for t in texts:
            d = f.create()
            d.append(t)
            try:
                langs = d.get_probabilities()
                out.append({"seed": seed, "text": t, "langs": [[l.lang, repr(l.prob)] for l in langs]})
            except LangDetectException as e:
                out.append({"seed": seed, "text": t, "error": str(e)})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


main()
