"""The judge's answer is read as the verdict it plainly gives, or as INCONCLUSIVE: never PASS
when it says FAIL or says nothing certain.

Over a generated corpus (``judge_corpus.py``: about 13,000 answers, clean, negated,
conditional, contrasted, questioned, with two verdicts, in JSON and broken JSON, with
Unicode tricks), through each way a verdict arrives: text, a verdict tool call with text
beside it, and the whole judged check under ``judge_inconclusive: pass``.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence

import pytest
from judge_corpus import TRUTHS, Answer, corpus

from toolproof import Message, Trace
from toolproof._messages import ModelResponse, ModelSettings, ToolCall, ToolDefinition
from toolproof._verdict import _prose, parse_verdict
from toolproof._verdict import read_response as _read_response
from toolproof.evals import SessionRecord
from toolproof.evals._judge import judge
from toolproof.models import Model

ANSWERS = corpus()


def test_the_corpus_is_large_and_has_every_truth() -> None:
    assert len(ANSWERS) > 10_000
    assert {answer.truth for answer in ANSWERS} == set(TRUTHS)
    counts = collections.Counter(answer.truth for answer in ANSWERS)
    assert min(counts.values()) >= 500, counts


def wrong(answers: Sequence[Answer], read: dict[str, str]) -> list[tuple[str, str, str]]:
    """Answers read as PASS without saying PASS, or as FAIL when they say PASS."""
    return [
        (a.family, a.truth, a.text)
        for a in answers
        if (read[a.text] == "PASS" and a.truth != "PASS")
        or (read[a.text] == "FAIL" and a.truth in ("PASS", "INCONCLUSIVE"))
    ]


def test_text_never_passes_unless_it_says_pass() -> None:
    read = {a.text: parse_verdict(a.text)[0] for a in ANSWERS}
    assert wrong(ANSWERS, read) == []


def test_every_plain_answer_is_read_as_what_it_says() -> None:
    plain = [a for a in ANSWERS if a.family in ("clean", "json")]
    assert len(plain) > 2_500
    misread = [(a.text, a.truth, parse_verdict(a.text)[0]) for a in plain]
    assert [m for m in misread if m[1] != m[2]] == []


@pytest.mark.parametrize(
    "text",
    [
        "This does not pass: the assistant invented the balance.",
        "Not a PASS – the balance was never returned.",
        "I cannot pass this answer: it claims an addition tool.",
        "It would PASS only if the tool had been called; it does not, so FAIL",
    ],
)
def test_the_reported_answers_are_inconclusive(text: str) -> None:
    verdict, reason = parse_verdict(text)
    assert verdict == "INCONCLUSIVE"
    assert reason.startswith("the judge's answer could not be read as a verdict")


def test_a_verdict_tool_call_with_text_beside_it() -> None:
    """The tool's verdict stands unless the text beside it names another or hedges it."""
    for verdict in ("PASS", "FAIL", "INCONCLUSIVE"):
        call = ToolCall("record_verdict", {"verdict": verdict, "reason": "r"})
        for answer in ANSWERS[::7]:
            got = _read_response([call], answer.text).verdict
            if got == "PASS":
                # Text beside a PASS may only repeat it plainly, or name no verdict word.
                alone = _prose(answer.text)
                assert verdict == "PASS", answer
                assert alone.verdict == "PASS" or "(names no verdict)" in alone.reason, answer
            assert got in (verdict, "INCONCLUSIVE"), answer
        assert _read_response([call], None).verdict == verdict
        assert _read_response([call], "Let me look at the transcript.").verdict == verdict


def test_several_or_broken_verdict_calls() -> None:
    passing = ToolCall("record_verdict", {"verdict": "PASS", "reason": "ok"})
    failing = ToolCall("record_verdict", {"verdict": "FAIL", "reason": "no"})
    broken = ToolCall("record_verdict", {}, raw_arguments='{"verdict": PASS', arguments_error="x")
    assert _read_response([passing, failing], None).verdict == "INCONCLUSIVE"
    assert _read_response([passing, passing], None).verdict == "PASS"
    assert _read_response([broken], None).read is False
    assert _read_response([broken], "FAIL: no product").verdict == "FAIL"
    not_a_verdict = ToolCall("record_verdict", {"verdict": "PASS?", "reason": "hm"})
    assert _read_response([not_a_verdict], None).verdict == "INCONCLUSIVE"
    assert _read_response([not_a_verdict], None).read is False


class Replies(Model):
    """A judge that answers each request with the next text, and records what it was asked."""

    name = "judge"

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self.asked: list[tuple[list[str], ModelSettings]] = []

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        self.asked.append(([t.name for t in tools], settings))
        return ModelResponse(Message.assistant(self.texts[len(self.asked) - 1]))


def test_a_judged_check_never_passes_an_unreadable_answer() -> None:
    """Under ``judge_inconclusive: pass`` only the judge's own INCONCLUSIVE passes."""
    sample = ANSWERS[::3]
    model = Replies([a.text for a in sample])
    record = SessionRecord([Trace(id="t", input="hi", output="hello")])

    async def grade_all() -> list[str]:
        statuses = []
        for _ in sample:
            result, called = await judge(model, "Polite.", record, {}, inconclusive="pass")
            assert called
            statuses.append(result.status)
        return statuses

    statuses = asyncio.run(grade_all())
    for answer, status in zip(sample, statuses, strict=True):
        if status == "pass":
            assert answer.truth in ("PASS", "INCONCLUSIVE"), answer
            assert parse_verdict(answer.text)[0] == answer.truth, answer
    assert {tuple(tools) for tools, _ in model.asked} == {("record_verdict",)}
    assert {settings.tool_choice for _, settings in model.asked} == {"record_verdict"}


LONG = [
    ("PASS " * 4_000, "INCONCLUSIVE"),  # 4,000 mentions in one sentence
    ("pass, " * 3_300, "INCONCLUSIVE"),
    ("The assistant answered well " * 700 + "so PASS.", "PASS"),  # one mention, long prefix
    ("PASS " * 100_000, "INCONCLUSIVE"),  # too long to read as prose
    ('{"verdict": "PASS", "reason": "ok"}' + " FAIL" * 200_000, "INCONCLUSIVE"),
    ('{"verdict": "FAIL", "reason": "ok"}' + " FAIL" * 3_000, "INCONCLUSIVE"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("text", "verdict"), LONG, ids=[str(i) for i in range(len(LONG))])
def test_reading_a_long_answer_is_bounded_work(
    monkeypatch: pytest.MonkeyPatch, text: str, verdict: str
) -> None:
    import toolproof._verdict as module

    scanned: list[int] = []
    real = module._hedges

    def counting(piece: str, vocabulary: frozenset[str]) -> bool:
        scanned.append(len(piece))
        return real(piece, vocabulary)

    monkeypatch.setattr(module, "_hedges", counting)
    assert parse_verdict(text)[0] == verdict
    # At most three looks (before, the clause after, the sentence after) at 21 mentions,
    # each over at most the longest text read as prose.
    assert len(scanned) <= 3 * 21
    assert sum(scanned) <= 3 * 21 * 20_000
