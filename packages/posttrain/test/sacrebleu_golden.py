"""Golden values for the chrF / BLEU tests of @apertus/posttrain, produced with sacreBLEU.

Run (sacreBLEU 2.6.0 when the committed sacrebleu-golden.ts was made; Debian bookworm has no
python3-sacrebleu package, so it was installed in a throw-away virtual environment):

    python3 -m venv --system-site-packages /tmp/sb && /tmp/sb/bin/pip install sacrebleu==2.6.0
    /tmp/sb/bin/python packages/posttrain/test/sacrebleu_golden.py > packages/posttrain/test/sacrebleu-golden.ts

Cases: hand-written segments that exercise each rule (13a symbols, periods and commas next to
digits, digit-dash, HTML entities, <skipped>, Python-only whitespace U+0085 and U+00A0, astral code
points, empty hypothesis / reference, several references, zero higher-order matches) plus 40
pseudo-random segment pairs (random.Random(20250921)) built from a word list with punctuation.
"""
import json
import random

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

HAND = [
    ("Alle Menschen sind frei und gleich an Würde und Rechten geboren.",
     ["Alle Menschen sind frei und gleich an Würde und Rechten geboren."]),
    ("Tut ils umans naschan libers ed eguals en dignitad ed en dretgs.",
     ["Tut ils umans naschan libers ed eguals en dignitad ed en dretgs. Els èn dotads cun raschun e conscienza."]),
    ("The cat sat on the mat.", ["The cat is on the mat.", "There is a cat on the mat."]),
    ("It costs 3.14 dollars, or 1,000 cents (approx.) - see 2-3 pages.",
     ["It costs $3.14, i.e. 1,000 cents; see pages 2-3."]),
    ("A &quot;quoted&quot; word &amp; an &lt;angle&gt; <skipped> end", ['A "quoted" word & an <angle> end']),
    ("line one-\nbroken\ttabs  and\u00a0nbsp\u0085next", ["line onebroken tabs and nbsp next"]),
    ("emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 text", ["emoji 😀 and unicode text"]),
    ("", ["a non-empty reference"]),
    ("a hypothesis against nothing", [""]),
    ("completely different words here", ["nothing overlaps whatsoever"]),
    ("short", ["short but the reference goes on for a while"]),
    ("l'uman ha il dretg da la vita, da la libertad e da la segirezza da sia persuna.",
     ["Mintga uman ha il dretg da la vita, da la libertad e da la segirezza da sia persuna."]),
    ("Hello, world!", ["hello world", "Hello world!!"]),
    ("one two three four five", ["one two three four five six"]),
    ("x y", ["x y z", "x"]),
]

WORDS = [
    "the", "a", "Menschen", "Würde", "dignitad", "l'uman", "l’uman", "dretgs", "naschan", "libers",
    "3.14", "1,000", "2-3", "(approx.)", "co-operation", "U.N.", "e.g.", "&amp;", "'quoted'", "\"q\"",
    "Rechte,", "Gewissen.", "libertad;", "¿qué?", "¡sí!", "état", "ÉTAT", "naïve", "😀", "—", "-",
    "x", "y", "z", "art.", "1.", "12,5%", "$5", "a/b", "[ref]", "{k}", "~", "^", "_", "|", "@home",
]


def random_sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def mutate(rng, sent):
    toks = sent.split()
    out = []
    for t in toks:
        r = rng.random()
        if r < 0.15:
            continue
        if r < 0.3:
            out.append(rng.choice(WORDS))
        else:
            out.append(t)
        if rng.random() < 0.1:
            out.append(rng.choice(WORDS))
    return " ".join(out)


rng = random.Random(20250921)
RANDOM = []
for _ in range(40):
    hyp = random_sentence(rng, rng.randint(1, 14))
    nrefs = rng.choice([1, 1, 1, 2, 3])
    RANDOM.append((hyp, [mutate(rng, hyp) if rng.random() < 0.8 else random_sentence(rng, rng.randint(1, 10)) for _ in range(nrefs)]))

SENTENCES = HAND + RANDOM


def streams(refs_per_segment):
    """sacreBLEU wants references as streams; pad variable reference counts with None."""
    k = max(len(r) for r in refs_per_segment)
    return [[r[i] if i < len(r) else None for r in refs_per_segment] for i in range(k)]


def corpus_scores(hyps, refs):
    s = streams(refs)
    return {
        "chrf": CHRF().corpus_score(hyps, s).score,
        "chrfPlusPlus": CHRF(word_order=2).corpus_score(hyps, s).score,
        "chrfLowercase": CHRF(lowercase=True).corpus_score(hyps, s).score,
        "chrfWhitespace": CHRF(whitespace=True).corpus_score(hyps, s).score,
        "chrfEps": CHRF(eps_smoothing=True).corpus_score(hyps, s).score,
        "bleu": BLEU().corpus_score(hyps, s).score,
        "bleuNone": BLEU(smooth_method="none").corpus_score(hyps, s).score,
        "bleuFloor": BLEU(smooth_method="floor").corpus_score(hyps, s).score,
        "bleuAddK": BLEU(smooth_method="add-k").corpus_score(hyps, s).score,
        "bleuEffective": BLEU(effective_order=True).corpus_score(hyps, s).score,
        "bleuLowercase": BLEU(lowercase=True).corpus_score(hyps, s).score,
        "bleuTokNone": BLEU(tokenize="none").corpus_score(hyps, s).score,
    }


def bleu_detail(score):
    return {"counts": list(score.counts), "totals": list(score.totals), "bp": score.bp,
            "sysLen": score.sys_len, "refLen": score.ref_len}


tok = Tokenizer13a()
sentence_rows = []
for hyp, refs in SENTENCES:
    sentence_rows.append({
        "hyp": hyp,
        "refs": refs,
        "tok13a": tok(hyp.rstrip()),
        "chrf": sacrebleu.sentence_chrf(hyp, refs).score,
        "chrfPlusPlus": sacrebleu.sentence_chrf(hyp, refs, word_order=2).score,
        "bleu": sacrebleu.sentence_bleu(hyp, refs).score,
        "bleuAddK": sacrebleu.sentence_bleu(hyp, refs, smooth_method="add-k").score,
    })

CORPORA = [
    ("hand", [h for h, _ in HAND], [r for _, r in HAND]),
    ("random", [h for h, _ in RANDOM], [r for _, r in RANDOM]),
    ("single-ref", [h for h, _ in SENTENCES[:12]], [r[:1] for _, r in SENTENCES[:12]]),
]
corpus_rows = []
for name, hyps, refs in CORPORA:
    row = {"name": name, "hyps": hyps, "refs": refs}
    row.update(corpus_scores(hyps, refs))
    row["bleuDetail"] = bleu_detail(BLEU().corpus_score(hyps, streams(refs)))
    corpus_rows.append(row)


def ts(name, value, doc):
    print(f"/** {doc} */")
    print(f"export const {name} = {json.dumps(value, ensure_ascii=True, indent=1)} as const;")
    print()


print("// Generated by packages/posttrain/test/sacrebleu_golden.py with sacreBLEU", sacrebleu.__version__, "- do not edit.")
print()
ts("SENTENCE_GOLDEN", sentence_rows,
   "Per segment: sacreBLEU 13a tokenization of the hypothesis, sentence chrF / chrF++ and sentence BLEU (exp, add-k).")
ts("CORPUS_GOLDEN", corpus_rows, "Corpus chrF variants and corpus BLEU with every smoothing method.")
