"""Judge answers written as prose or JSON, each with what it truly says (its ground truth).

Templates (clean, negated, conditional, contrasted, questioned, two verdicts, JSON and
broken JSON, Unicode tricks) x verdict words x casings x positions in the answer x sentence
punctuation. ``AMBIGUOUS`` marks an answer that gives no single verdict; a negated PASS is
a FAIL, a negated FAIL or INCONCLUSIVE says nothing certain (``AMBIGUOUS``).

Used by ``test_judge_verdicts.py`` (which asserts on every answer) and by
``bench/bench_judge.py`` (which prints the confusion matrix).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE")
TRUTHS = ("PASS", "FAIL", "INCONCLUSIVE", "AMBIGUOUS")


class Answer(NamedTuple):
    text: str
    truth: str
    family: str  # the template family, for the figures by family


def _casings(word: str) -> list[str]:
    return [word, word.lower(), word.title(), f"**{word}**", f"`{word}`"]


def _negated(verdict: str) -> str:
    return "FAIL" if verdict == "PASS" else "AMBIGUOUS"


def _other(verdict: str) -> str:
    return {"PASS": "FAIL", "FAIL": "PASS", "INCONCLUSIVE": "PASS"}[verdict]


REASON = "the assistant quoted the tool's result of 96 days"
REASON_NEG = "the assistant did not invent any figure"  # a negation in the reason only
COND = "the refund tool had been called"

# (template, truth as a function of the verdict); {V} the verdict word, {W} another one.
CLEAN = [
    "{V}",
    "{V}.",
    "{V}: {R}.",
    "{V}: {N}.",
    "{V} - {R}.",
    "{V} — {N}.",
    "{V} ({N}).",
    "Verdict: {V}",
    "Verdict: {V}. {RS}.",
    "Final verdict - {V}",
    "**Verdict:** {V}\n\nReason: {N}.",
    "Answer: {V}\n{RS}.",
    "The verdict is {V}.",
    "{RS}. So the verdict is {V}.",
    "{RS}.\n\n{V}",
    "{NS}. {V}.",
    "Grade: {V}!",
    "结论：{V}",
    "判定：{V}。理由：助手引用了工具的结果。",
    "{V}. {V}.",
]
NEGATED = [
    "This does not {v}: {R}.",
    "Not a {V} – {R}.",
    "I cannot {v} this answer: {R}.",
    "It doesn't {v}.",
    "It does NOT {v}.",
    "This is not {V}.",
    "Definitely not {V}.",
    "I would not give it a {V}.",
    "{V} is not warranted: {R}.",
    "A {V} would be wrong here.",
    "Never {V}.",
    "No {V}.",
    "{V}? No.",
    "It can't {v}.",
    "It won’t {v}.",
    "不 {V}",
    "不能判定为{V}。",
    "Nicht {V}.",
    "Ce n'est pas {V}.",
    "No es {V}.",
    "Не {V}.",
    "ليس {V}.",
    "Hardly a {V}.",
    "Without the refund call this is no {V}.",
    "Unable to {v} it.",
]
CONDITIONAL = [
    "It would {V} only if {C}.",
    "{V} if {C}.",
    "If {C}, {V}.",
    "{V} unless {C}.",
    "Assuming {C}, {V}.",
    "{V}, provided {C}.",
    "It could {v} if {C}.",
    "It might {v}.",
    "Maybe {V}.",
    "Probably {V}.",
    "Possibly a {V}.",
    "{V}: only if {C}.",
    "Should {C}, it would be a {V}.",
    "Whether it is a {V} depends on whether {C}.",
    "如果{C}，{V}。",
    "Wenn {C}, {V}.",
    "{V} would be right once {C}.",
]
CONTRAST = [
    "{V}, but {N}.",
    "Although {R}, {V}.",
    "{V} although {N}.",
    "{V}, however {N}.",
    "Mostly {V}.",
    "Almost a {V}.",
    "Partially {V}.",
    "{V} except for the tone.",
    "While {R}, {V}.",
    "{V} whereas {N}.",
    "Despite the tone, {V}.",
    "{V} but only partially.",
    "但是{V}。",
]
QUESTION = [
    "{V}?",
    "Does it {v}?",
    "Should this {v}?",
    "Is this a {V}?",
    "{V}？",
]
TWO = [  # two verdicts: the truth is the second when it corrects the first, else ambiguous
    ("{V} or {W}", "AMBIGUOUS"),
    ("{V}/{W}", "AMBIGUOUS"),
    ("{V}. Actually, {W}.", "W"),
    ("First I thought {V}, but it is {W}.", "W"),
    ("It would {V} only if {C}; it does not, so {W}.", "W"),
    ("{V}: {R}. {W}: {N}.", "AMBIGUOUS"),
    ("Verdict: {V}\nCorrection: {W}", "W"),
]
UNICODE = [  # (template, truth): tricks on the negation or the verdict word
    ("N\u200bot a {V}.", "NEG"),  # a zero-width space inside the negation
    ("No\u200dt a {V}.", "NEG"),
    ("N\u043et a {V}.", "NEG"),  # a Cyrillic o in 'not' (a homoglyph)
    ("D\u043ees n\u043et {v}.", "NEG"),
    ("\uff2e\uff2f\uff34 {V}.", "NEG"),  # full-width NOT
    ("\u202e{V}\u202c is not the answer.", "NEG"),  # a right-to-left override before it
    ("not\u00a0{V}.", "NEG"),  # a no-break space
    ("non-{V}.", "NEG"),
    ("un-{V}-able.", "AMBIGUOUS"),
    ("{V}\u0301 is what I would not say.", "NEG"),  # a combining accent after it
    ("P\u0410SS if you ignore the tone.", "AMBIGUOUS"),  # a Cyrillic A in PASS
]
PREFIXES = ["", "The assistant called get_leave_balance(E001) and got 5. ", "Let me grade.\n"]
SUFFIXES = ["", " The transcript is short.", "\nThat is all."]


def _fill(template: str, verdict: str, word: str, other: str) -> str:
    return template.format(
        V=word,
        v=word.lower().strip("*`"),
        W=other,
        R=REASON,
        N=REASON_NEG,
        RS=REASON[0].upper() + REASON[1:],
        NS=REASON_NEG[0].upper() + REASON_NEG[1:],
        C=COND,
    )


def _resolve(truth: str, verdict: str, other: str) -> str:
    if truth == "V":
        return verdict
    if truth == "W":
        return other
    if truth == "NEG":
        return _negated(verdict)
    return truth


def _prose() -> Iterator[Answer]:
    families: list[tuple[str, list[tuple[str, str]]]] = [
        ("clean", [(t, "V") for t in CLEAN]),
        ("negated", [(t, "NEG") for t in NEGATED]),
        ("conditional", [(t, "AMBIGUOUS") for t in CONDITIONAL]),
        ("contrast", [(t, "AMBIGUOUS") for t in CONTRAST]),
        ("question", [(t, "AMBIGUOUS") for t in QUESTION]),
        ("two verdicts", TWO),
        ("unicode", UNICODE),
    ]
    for family, templates in families:
        for template, truth in templates:
            for verdict in VERDICTS:
                other = _other(verdict)
                for word in _casings(verdict):
                    text = _fill(template, verdict, word, other)
                    for prefix in PREFIXES:
                        for suffix in SUFFIXES:
                            yield Answer(
                                prefix + text + suffix, _resolve(truth, verdict, other), family
                            )


def _json() -> Iterator[Answer]:
    for verdict in VERDICTS:
        other = _other(verdict)
        for casing in (verdict, verdict.lower(), verdict.title()):
            body = json.dumps({"verdict": casing, "reason": REASON})
            hedged = json.dumps({"verdict": casing, "reason": f"it would {other} if {COND}"})
            clean = [
                body,
                f"```json\n{body}\n```",
                f"Here is my answer:\n{body}",
                hedged,  # the reason may discuss anything: the verdict field decides
                json.dumps({"Verdict": casing, "Reason": REASON}),
                '{"verdict": "' + casing + '"',  # cut off: read as prose
            ]
            for text in clean:
                yield Answer(text, verdict, "json")
            ambiguous = [
                f"{body}\nActually, {other}.",
                f"{body}\n{json.dumps({'verdict': other, 'reason': REASON})}",
                json.dumps({"verdict": f"{casing} or {other}"}),
                json.dumps({"verdict": f"not {casing}"}),
                json.dumps({"verdict": f"{casing}?"}),
                json.dumps({"verdict": ""}),
                json.dumps({"verdict": None}),
                json.dumps({"verdict": [casing]}),
            ]
            for text in ambiguous:
                yield Answer(text, "AMBIGUOUS", "json (hostile)")
            yield Answer(f"It would not {casing}: {body}", "AMBIGUOUS", "json (hostile)")


def corpus() -> list[Answer]:
    """Every generated answer, with its truth."""
    return [*_prose(), *_json()]
