"""Builds the IFEval parity corpus and records lm-eval's own verdicts on it.

The corpus is generated here (seeded, so a rerun gives the same items):
for every instruction of lm-eval's INSTRUCTION_DICT, responses that follow
it, break it and sit on its edges, plus prompts that combine several
instructions. Each item is scored by lm-evaluation-harness's own code
(lm_eval/tasks/ifeval/utils.py's test_instruction_following_strict and
_loose, which build the classes of instructions.py), not by anything of
ttis:

  - "strict"/"loose": with langdetect's DetectorFactory.seed = 0 and its
    profiles loaded in file-name order (what ttis's port does), so that the
    comparison is exact;
  - "unseeded": the verdicts of RUNS further runs as lm-eval runs them
    (langdetect unseeded, its profiles in os.listdir order); an item whose
    runs disagree is lm-eval's own nondeterminism and is marked.

Requirements (none of it is committed): lm-eval's ifeval files at
LMEVAL_IFEVAL (a folder laid out lm_eval/tasks/ifeval/{instructions,
instructions_registry,instructions_util,utils}.py, with empty __init__.py
files above them), NLTK >= 3.9.1 on PYTHONPATH, NLTK_DATA holding
tokenizers/punkt_tab/english, python3-langdetect and python3-immutabledict.

  PYTHONPATH=$LMEVAL_IFEVAL:<nltk 3.9.1> NLTK_DATA=<dir> \
    /usr/bin/python3 testdata/lmeval_golden.py > testdata/lmeval_golden.json
"""
import json
import os
import random
import sys

import langdetect
from langdetect import DetectorFactory, detector_factory

from lm_eval.tasks.ifeval import instructions_registry, utils

RUNS = 3

EN = [
    "The quick brown fox jumps over the lazy dog.",
    "We walked along the river until the sun went down.",
    "Dr. Smith arrived at 5 p.m. and left early.",
    "Is this the right way to the station?",
    "What a wonderful day it has been!",
    "The U.S. economy grew by 2.5 percent last year.",
    "She said, \"I will be there soon.\"",
    "Mr. Brown and Mrs. Green met at the cafe on Main St. yesterday.",
    "This product costs $3.99 and ships in 2 days.",
    "I think that the answer is clear... or is it?",
    "Our team won the final match in overtime.",
    "Please read the instructions carefully before you begin.",
    "The meeting was moved to Jan. 5th at noon.",
    "Rain is expected tomorrow, so bring an umbrella.",
    "NASA launched a new rover to Mars in 2020.",
]
FOREIGN = {
    "fr": "Le renard brun rapide saute par-dessus le chien paresseux pr\u00e8s de la rivi\u00e8re.",
    "de": "Der schnelle braune Fuchs springt \u00fcber den faulen Hund am Flussufer.",
    "es": "El r\u00e1pido zorro marr\u00f3n salta sobre el perro perezoso junto al r\u00edo.",
    "it": "La volpe marrone veloce salta sopra il cane pigro vicino al fiume.",
    "pt": "A r\u00e1pida raposa marrom pula sobre o c\u00e3o pregui\u00e7oso perto do rio.",
    "ru": "\u0411\u044b\u0441\u0442\u0440\u0430\u044f \u043a\u043e\u0440\u0438\u0447\u043d\u0435\u0432\u0430\u044f \u043b\u0438\u0441\u0430 \u043f\u0435\u0440\u0435\u043f\u0440\u044b\u0433\u0438\u0432\u0430\u0435\u0442 \u0447\u0435\u0440\u0435\u0437 \u043b\u0435\u043d\u0438\u0432\u0443\u044e \u0441\u043e\u0431\u0430\u043a\u0443.",
    "ja": "\u7d20\u65e9\u3044\u8336\u8272\u306e\u72d0\u304c\u6020\u3051\u8005\u306e\u72ac\u3092\u98db\u3073\u8d8a\u3048\u307e\u3059\u3002",
    "ko": "\ube60\ub978 \uac08\uc0c9 \uc5ec\uc6b0\uac00 \uac8c\uc73c\ub978 \uac1c\ub97c \ub6f0\uc5b4\ub118\uc2b5\ub2c8\ub2e4.",
    "hi": "\u0924\u0947\u091c\u093c \u092d\u0942\u0930\u0940 \u0932\u094b\u092e\u0921\u093c\u0940 \u0906\u0932\u0938\u0940 \u0915\u0941\u0924\u094d\u0924\u0947 \u0915\u0947 \u090a\u092a\u0930 \u0915\u0942\u0926\u0924\u0940 \u0939\u0948\u0964",
    "ar": "\u0627\u0644\u062b\u0639\u0644\u0628 \u0627\u0644\u0628\u0646\u064a \u0627\u0644\u0633\u0631\u064a\u0639 \u064a\u0642\u0641\u0632 \u0641\u0648\u0642 \u0627\u0644\u0643\u0644\u0628 \u0627\u0644\u0643\u0633\u0648\u0644.",
    "fi": "Nopea ruskea kettu hypp\u00e4\u00e4 laiskan koiran yli joen rannalla.",
    "sw": "Mbweha mwepesi wa kahawia anaruka juu ya mbwa mvivu karibu na mto.",
    "vi": "Con c\u00e1o n\u00e2u nhanh nh\u1eb9n nh\u1ea3y qua con ch\u00f3 l\u01b0\u1eddi bi\u1ebfng.",
    "th": "\u0e2a\u0e38\u0e19\u0e31\u0e02\u0e08\u0e34\u0e49\u0e07\u0e08\u0e2d\u0e01\u0e2a\u0e35\u0e19\u0e49\u0e33\u0e15\u0e32\u0e25\u0e01\u0e23\u0e30\u0e42\u0e14\u0e14\u0e02\u0e49\u0e32\u0e21\u0e2a\u0e38\u0e19\u0e31\u0e02",
    "uk": "\u0428\u0432\u0438\u0434\u043a\u0430 \u0440\u0443\u0434\u0430 \u043b\u0438\u0441\u0438\u0446\u044f \u0441\u0442\u0440\u0438\u0431\u0430\u0454 \u0447\u0435\u0440\u0435\u0437 \u043b\u0456\u043d\u0438\u0432\u043e\u0433\u043e \u0441\u043e\u0431\u0430\u043a\u0430.",
    "pl": "Szybki br\u0105zowy lis przeskakuje nad leniwym psem przy rzece.",
}
EDGE = ["", " ", "\n", "\t\n  ", "***", "******", "*", "**", "\u00a0", "\x1c", "\u3000", "\u0130\u03a3", "\u00aa\u00ba",
        "\u01c5", "\u2160\u2161", "x\u0301", "caf\u00e9", "\U0001F600", "\r\n", "  \n\n  ", "\"", "\"\"", "<<>>", "[]"]


def sentences(rnd, n, pool=EN):
    return " ".join(rnd.choice(pool) for _ in range(n))


def maybe_wrap(rnd, text):
    """Adds the first/last lines the loose variants remove, or asterisks."""
    r = rnd.random()
    if r < 0.15:
        return "Sure, here it is:\n" + text
    if r < 0.3:
        return text + "\nHope this helps!"
    if r < 0.4:
        return "Here you go:\n" + text + "\nLet me know."
    if r < 0.5:
        return "**" + text + "**"
    if r < 0.55:
        return text + rnd.choice(EDGE)
    return text


def gen_keywords_existence(rnd):
    words = rnd.sample(["apple", "river", "data", "Python", "sun", "moon", "café", "AI", "e.g.", "c++", "ab*"], rnd.randint(1, 3))
    words = [w for w in words if w not in ("c++", "ab*")] or ["apple"]
    body = sentences(rnd, rnd.randint(1, 4))
    use = [w for w in words if rnd.random() < 0.7]
    for w in use:
        body += " " + rnd.choice([w, w.upper(), w.capitalize(), w + "s", "pre" + w])
    return {"keywords": words}, maybe_wrap(rnd, body)


def gen_keywords_frequency(rnd):
    kw = rnd.choice(["the", "data", "fox", " river ", "a", "ing", "AI", "dog."])
    freq = rnd.randint(1, 6)
    rel = rnd.choice(["less than", "at least"])
    body = sentences(rnd, rnd.randint(0, 6)) + (" " + kw.strip()) * rnd.randint(0, 6)
    return {"keyword": kw, "frequency": freq, "relation": rel}, maybe_wrap(rnd, body)


def gen_forbidden(rnd):
    words = rnd.sample(["fox", "dog", "rain", "the", "cat", "NASA", "sun"], rnd.randint(1, 3))
    body = sentences(rnd, rnd.randint(1, 4))
    if rnd.random() < 0.4:
        body += " " + rnd.choice(["concatenate", "foxes", "doghouse", "Cat", "the-end", "sun_dial", "RAIN"])
    return {"forbidden_words": words}, maybe_wrap(rnd, body)


def gen_letter(rnd):
    letter = rnd.choice("abcdefghijklmnopqrstuvwxyzAEZ")
    freq = rnd.randint(1, 12)
    rel = rnd.choice(["less than", "at least"])
    body = sentences(rnd, rnd.randint(0, 3)) + " " + (letter * rnd.randint(0, 8)) + rnd.choice(["", "\u0130", "\u212a", letter.upper() * 3])
    return {"letter": letter, "let_frequency": freq, "let_relation": rel}, maybe_wrap(rnd, body)


def gen_language(rnd):
    lang = rnd.choice(list(FOREIGN) + ["en", "en", "fa", "bn", "ta", "te", "ur"])
    r = rnd.random()
    if r < 0.4 and lang in FOREIGN:
        body = FOREIGN[lang] + " " + FOREIGN[lang]
    elif r < 0.6:
        body = sentences(rnd, rnd.randint(1, 4))
    elif r < 0.75:
        a, b = rnd.sample(list(FOREIGN.values()) + EN, 2)
        body = a + " " + b
    elif r < 0.85:
        body = rnd.choice(["1234 5678", "!!! ???", "http://example.com", "ok", "hi", "NASA ESA", "a@b.cd"])
    else:
        body = rnd.choice(list(FOREIGN.values()))[: rnd.randint(1, 30)]
    return {"language": lang}, maybe_wrap(rnd, body)


def gen_sentences(rnd):
    n = rnd.randint(1, 8)
    rel = rnd.choice(["less than", "at least"])
    body = sentences(rnd, rnd.randint(0, 9))
    if rnd.random() < 0.3:
        body = body.replace(". ", ".\n")
    if rnd.random() < 0.2:
        body += rnd.choice([" e.g. this", " etc. and more", " (See fig. 3.) Next one.", " 1. First. 2. Second.", "... wait... what"])
    return {"num_sentences": n, "relation": rel}, maybe_wrap(rnd, body)


def gen_paragraphs(rnd):
    n = rnd.randint(1, 5)
    k = rnd.randint(0, 6)
    seps = ["\n***\n", " *** ", "***", "\n\n***\n\n", "\t***\t", "\u00a0***\u00a0", "****", "\n* * *\n"]
    parts = [sentences(rnd, rnd.randint(1, 2)) for _ in range(k)]
    if rnd.random() < 0.2 and parts:
        parts.insert(rnd.randint(0, len(parts)), "")
    sep = rnd.choice(seps)
    body = sep.join(parts)
    if rnd.random() < 0.15:
        body = rnd.choice(["***\n", ""]) + body + rnd.choice(["\n***", ""])
    return {"num_paragraphs": n}, maybe_wrap(rnd, body)


def gen_words(rnd):
    n = rnd.randint(1, 60)
    rel = rnd.choice(["less than", "at least"])
    body = sentences(rnd, rnd.randint(0, 7))
    if rnd.random() < 0.3:
        body += " " + rnd.choice(["snake_case_word", "3.14", "don't", "e-mail", "caf\u00e9", "\u00bd \u2160", "x\u0301y", "\u4e00\u4e8c\u4e09"])
    return {"num_words": n, "relation": rel}, maybe_wrap(rnd, body)


def gen_nth(rnd):
    num = rnd.randint(1, 4)
    nth = rnd.randint(1, num)
    first = rnd.choice(["The", "we", "Summary", "i", "Rain", "\"Quoted", "'tis", "Dr"])
    k = rnd.randint(1, 5)
    paras = [sentences(rnd, 1) for _ in range(k)]
    if rnd.random() < 0.6 and nth <= k:
        paras[nth - 1] = rnd.choice([first, first.upper(), "\"" + first + "\"", "'" + first, first + ",", first + "."]) + " " + paras[nth - 1]
    sep = rnd.choice(["\n\n", "\n\n", "\n\n\n", "\n", "\n\n \n\n"])
    body = sep.join(paras)
    return {"num_paragraphs": num, "nth_paragraph": nth, "first_word": first}, maybe_wrap(rnd, body)


def gen_placeholders(rnd):
    n = rnd.randint(1, 5)
    ph = ["[name]", "[address]", "[]", "[a\nb]", "[[x]", "[x]]", "[ ]", "[date of birth]"]
    body = sentences(rnd, rnd.randint(0, 2)) + " " + " ".join(rnd.choice(ph) for _ in range(rnd.randint(0, 6)))
    return {"num_placeholders": n}, maybe_wrap(rnd, body)


def gen_postscript(rnd):
    marker = rnd.choice(["P.S.", "P.P.S", "P.S.", "P.P.S", "Note:", "PS", "p.s"])
    ps = rnd.choice(["P.S. see you", "p.s. bye", "P.P.S also", "P. P. S. more", "PS: hi", "Note: done", "P.S see", "p. s. ok", "P.P.S.", "Postscript"])
    body = sentences(rnd, rnd.randint(1, 3))
    if rnd.random() < 0.7:
        body += rnd.choice(["\n", "\n\n", " "]) + ps
    return {"postscript_marker": marker}, maybe_wrap(rnd, body)


def gen_bullets(rnd):
    n = rnd.randint(1, 5)
    items = rnd.choice([["* a", "* b"], ["- a", "- b", "- c"], ["* a", "- b", "** c"], ["*a", "* b", "  * c"], ["*", "* x", "-"], ["1. a", "2. b"]])
    lines = items * rnd.randint(1, 2)
    sep = rnd.choice(["\n", "\n\n", "\n \n"])
    body = sentences(rnd, 1) + sep + sep.join(lines)
    return {"num_bullets": n}, maybe_wrap(rnd, body)


def gen_constrained(rnd):
    body = rnd.choice(["My answer is yes.", "My answer is no.", "My answer is maybe.", "my answer is yes.", "My answer is yes", "I think so. My answer is maybe. Really."]) 
    if rnd.random() < 0.3:
        body = sentences(rnd, 1) + " " + body
    return {}, maybe_wrap(rnd, body)


def gen_highlights(rnd):
    n = rnd.randint(1, 4)
    hs = ["*one*", "**two**", "* *", "****", "*a\nb*", "***x***", "*x**y*", "** **", "*  spaced  *"]
    body = sentences(rnd, 1) + " " + " and ".join(rnd.choice(hs) for _ in range(rnd.randint(0, 5)))
    return {"num_highlights": n}, maybe_wrap(rnd, body)


def gen_sections(rnd):
    sp = rnd.choice(["Section", "SECTION", "Part", "Chapter", " Section ", "PARAGRAPH", "(Section)"])
    n = rnd.randint(1, 5)
    k = rnd.randint(0, 6)
    name = rnd.choice([sp.strip(), sp.strip().lower(), "(Section)", "Section", "SECTION"])
    body = "\n".join(f"{name}{rnd.choice([' ', '', '  '])}{i + 1}\n{sentences(rnd, 1)}" for i in range(k))
    return {"section_spliter": sp, "num_sections": n}, maybe_wrap(rnd, body)


def gen_json(rnd):
    body = rnd.choice([
        '{"a": 1}', '```json\n{"a": [1, 2]}\n```', '```JSON\n{"x": null}\n```', '```\n[1,2,3]\n```', '{"a": NaN}',
        '{"a": Infinity, "b": -Infinity}', '{"a": 1,}', '[1, 2', '"just a string"', '42', 'null', '{"a": "\\u00e9"}',
        '{"a": "tab\there"}', '```json```{}', '```Json\n{}\n```', 'Here is JSON: {"a": 1}', '{"a":1} {"b":2}',
        '01', '1.', '-0.5e+3', '{"a": true, "b": false}', '{"a": "\\x"}', ' \n {"k": "v"} \n ', '```json\n{"a": 1}',
        '{"nested": {"deep": [{"x": [1, {"y": 2}]}]}}', '[]', '{}', '{"a": "line\\nbreak"}', "{'a': 1}",
    ])
    return {}, body if rnd.random() < 0.7 else maybe_wrap(rnd, body)


def gen_title(rnd):
    body = rnd.choice(["<<Poem of Joy>>\n", "<< >>\n", "<<<Nested>>>\n", "<<a\nb>>\n", "<<>>>\n", "no title\n", "<<x>> <<>>\n", "<<  <<x>> >>\n", "<>\n", "<<T>>"]) + sentences(rnd, 1)
    return {}, maybe_wrap(rnd, body)


def gen_two(rnd):
    a, b = sentences(rnd, 1), sentences(rnd, 1)
    body = rnd.choice([a + "\n******\n" + b, a + "******" + a, a + "\n******\n" + b + "\n******\n", "******\n" + a + "\n******\n" + b,
                       a + "\n******\n\n******\n" + b, a, a + " *** " + b, a + "\n******\n" + a + " "])
    return {}, maybe_wrap(rnd, body)


def gen_repeat(rnd):
    p = rnd.choice(["Write a poem about the sea.", "  Say hi.  ", "Explain \u0130stanbul's history.", "List three fruits"])
    body = rnd.choice([p, p.upper(), p.strip().lower(), "Sure! " + p, p.strip()[:-1]]) + " " + sentences(rnd, 1)
    return {"prompt_to_repeat": p}, maybe_wrap(rnd, body)


def gen_end(rnd):
    e = rnd.choice(["Is there anything else I can help with?", "Any other questions?", " Peace. ", "\u039f\u0394\u039f\u03a3"])
    body = sentences(rnd, 1) + " " + rnd.choice([e, e.lower(), e + "\"", "\"" + e + "\"", e + ".", e + " ", e[:-1], "\u03bf\u03b4\u03bf\u03c2"])
    return {"end_phrase": e}, maybe_wrap(rnd, body)


def gen_capital_freq(rnd):
    n = rnd.randint(1, 8)
    rel = rnd.choice(["less than", "at least"])
    caps = ["NASA", "USA", "I", "A", "OK", "U.S.", "CAN'T", "HELLO-WORLD", "X1", "\u00c9T\u00c9", "CamelCase", "ALL CAPS HERE", "(FBI)", "\"NOW\""]
    body = sentences(rnd, rnd.randint(0, 2)) + " " + " ".join(rnd.choice(caps) for _ in range(rnd.randint(0, 10)))
    return {"capital_frequency": n, "capital_relation": rel}, maybe_wrap(rnd, body)


def gen_capital(rnd):
    r = rnd.random()
    if r < 0.4:
        body = sentences(rnd, rnd.randint(1, 3)).upper()
    elif r < 0.6:
        body = rnd.choice(list(FOREIGN.values())).upper()
    elif r < 0.8:
        body = sentences(rnd, 1)
    else:
        body = rnd.choice(["1234 !!!", "OK", "HELLO", "\u00c9T\u00c9 CHAUD", "A B C", "NASA ESA"])
    return {}, maybe_wrap(rnd, body)


def gen_lower(rnd):
    r = rnd.random()
    if r < 0.4:
        body = sentences(rnd, rnd.randint(1, 3)).lower()
    elif r < 0.6:
        body = rnd.choice(list(FOREIGN.values())).lower()
    elif r < 0.8:
        body = sentences(rnd, 1)
    else:
        body = rnd.choice(["1234 !!!", "ok", "hello", "\u00aa\u00ba", "\u01c5x", "i"])
    return {}, maybe_wrap(rnd, body)


def gen_comma(rnd):
    return {}, maybe_wrap(rnd, sentences(rnd, rnd.randint(1, 3)).replace(",", "" if rnd.random() < 0.5 else ","))


def gen_quotation(rnd):
    s = sentences(rnd, 1)
    body = rnd.choice(["\"" + s + "\"", s, "\"" + s, " \"" + s + "\" ", "\"", "\"\"", "\u201c" + s + "\u201d", "'" + s + "'"])
    return {}, maybe_wrap(rnd, body)


GENERATORS = {
    "keywords:existence": gen_keywords_existence,
    "keywords:frequency": gen_keywords_frequency,
    "keywords:forbidden_words": gen_forbidden,
    "keywords:letter_frequency": gen_letter,
    "language:response_language": gen_language,
    "length_constraints:number_sentences": gen_sentences,
    "length_constraints:number_paragraphs": gen_paragraphs,
    "length_constraints:number_words": gen_words,
    "length_constraints:nth_paragraph_first_word": gen_nth,
    "detectable_content:number_placeholders": gen_placeholders,
    "detectable_content:postscript": gen_postscript,
    "detectable_format:number_bullet_lists": gen_bullets,
    "detectable_format:constrained_response": gen_constrained,
    "detectable_format:number_highlighted_sections": gen_highlights,
    "detectable_format:multiple_sections": gen_sections,
    "detectable_format:json_format": gen_json,
    "detectable_format:title": gen_title,
    "combination:two_responses": gen_two,
    "combination:repeat_prompt": gen_repeat,
    "startend:end_checker": gen_end,
    "change_case:capital_word_frequency": gen_capital_freq,
    "change_case:english_capital": gen_capital,
    "change_case:english_lowercase": gen_lower,
    "punctuation:no_comma": gen_comma,
    "startend:quotation": gen_quotation,
}
PER_ID = 100


def corpus():
    assert set(GENERATORS) == set(instructions_registry.INSTRUCTION_DICT), set(GENERATORS) ^ set(instructions_registry.INSTRUCTION_DICT)
    rnd = random.Random(20261202)
    items = []
    for iid in sorted(GENERATORS):
        for _ in range(PER_ID):
            kw, resp = GENERATORS[iid](rnd)
            items.append({"ids": [iid], "kwargs": [kw], "response": resp})
    # Prompts with several instructions: one response, the checks of each.
    ids = sorted(GENERATORS)
    for _ in range(300):
        chosen = rnd.sample(ids, rnd.randint(2, 4))
        kws, parts = [], []
        for iid in chosen:
            kw, resp = GENERATORS[iid](rnd)
            kws.append(kw)
            parts.append(resp)
        items.append({"ids": chosen, "kwargs": kws, "response": rnd.choice(["\n\n", " ", "\n"]).join(parts)})
    return items


def sorted_factory(seed):
    f = DetectorFactory()
    d = detector_factory.PROFILES_DIRECTORY
    names = sorted(n for n in os.listdir(d) if not n.startswith("."))
    f.load_json_profile([open(os.path.join(d, n), encoding="utf-8").read() for n in names])
    f.seed = seed
    return f


def verdicts(item):
    inp = utils.InputExample(key=0, instruction_id_list=item["ids"], prompt="", kwargs=item["kwargs"])
    s = utils.test_instruction_following_strict(inp, item["response"])
    lo = utils.test_instruction_following_loose(inp, item["response"])
    return s.follow_instruction_list, lo.follow_instruction_list


def main():
    import logging
    logging.disable(logging.CRITICAL)  # lm-eval logs every text langdetect cannot read
    items = corpus()
    detector_factory._factory = sorted_factory(0)
    for it in items:
        it["strict"], it["loose"] = verdicts(it)
    detector_factory._factory = None  # lm-eval's own: os.listdir order, unseeded
    DetectorFactory.seed = None
    for it in items:
        seen = {json.dumps(verdicts(it))}
        for _ in range(RUNS - 1):
            seen.add(json.dumps(verdicts(it)))
        if len(seen) > 1 or json.dumps([it["strict"], it["loose"]]) not in seen:
            it["unseeded"] = sorted(seen)
    json.dump({"lm_eval_commit": "4e7e0d47f33bc71070c1d38394bafbb52b117163", "langdetect_seed": 0, "items": items},
              sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


main()
