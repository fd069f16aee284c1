"""Replay grades what an answer states: its facts in any digit script, and broken bounds.

Generated answers with and without the recorded facts, numbers written in every Unicode
digit script (with thousands separators, signs and decimals), and a bounded argument that
changes in model mode.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Message, Trace, tool
from toolproof._grounding import check_grounding, stated_facts
from toolproof.models.fake import RequestInfo
from toolproof.replay import ReplayRules, replay
from toolproof.replay._grading import grade_answer
from toolproof.testing import FunctionModel, ScriptedModel, call

#: The zero of every decimal digit script Unicode has (ASCII, full-width, Arabic-Indic...).
ZEROS = [
    code
    for code in range(sys.maxunicode + 1)
    if unicodedata.category(chr(code)) == "Nd" and unicodedata.decimal(chr(code)) == 0
]


def written(number: str, zero: int) -> str:
    """``number`` (ASCII digits, separators, sign) with its digits in the script of ``zero``."""
    digits = "".join(chr(zero + int(c)) if c.isdigit() else c for c in number)
    if zero == 0x0660:  # Arabic-Indic: its own decimal and thousands separators
        digits = digits.replace(".", "\u066b").replace(",", "\u066c")
    return digits


def plain(value: int, cents: int | None, grouped: bool) -> str:
    text = f"{value:,}" if grouped else str(value)
    return text if cents is None else f"{text}.{cents:02d}"


numbers = st.tuples(st.integers(0, 10**7), st.one_of(st.none(), st.integers(1, 99)), st.booleans())
signs = st.sampled_from(["", "-", "\u2212", "\uff0d"])  # hyphen-minus, minus sign, full-width


def test_every_digit_script_is_found() -> None:
    assert len(ZEROS) > 60
    assert {0x30, 0xFF10, 0x0660, 0x06F0, 0x0966, 0x1D7CE} <= set(ZEROS)


@settings(max_examples=400, deadline=None)
@given(zero=st.sampled_from(ZEROS), number=numbers, sign=signs, cjk=st.booleans())
def test_a_number_grounds_whatever_its_digits(
    zero: int, number: tuple[int, int | None, bool], sign: str, cjk: bool
) -> None:
    value, cents, grouped = number
    ascii_text = plain(value, cents, grouped)
    token = sign + written(ascii_text, zero)
    answer = f"需要{token}天" if cjk else f"It takes {token} days."
    # The same value in the evidence, in ASCII or in the answer's script, grounds it.
    assert check_grounding(answer, [f"days: {ascii_text}"]).ok
    assert check_grounding(f"It takes {ascii_text} days.", [f"days: {token}"]).ok
    # Another value does not, and the claim is reported as the answer wrote it.
    other = plain(value + 1, cents, grouped)
    assert check_grounding(answer, [f"days: {other}"]).ungrounded == [token]
    # Replay's comparison of answers reads the same value from both scripts.
    assert (
        stated_facts(answer).keys() == stated_facts(f"{sign}{ascii_text}".join(["x ", " y"])).keys()
    )


def test_the_reported_full_width_case() -> None:
    assert check_grounding("请假７天", ['{"days": 5}']).ungrounded == ["７"]
    assert check_grounding("请假５天", ['{"days": 5}']).ok
    assert check_grounding("Balance: ٣٬٤٥٦٫٥ EUR", ["3456.5"]).ok


# -- answers with and without the recorded facts -------------------------------------------


@tool
def price(item: str) -> dict[str, Any]:
    """The price of some items.

    Args:
        item: What to price.
    """
    return PRICES[item]


PRICES: dict[str, dict[str, Any]] = {}


def _trace(item: str, answer: str) -> Trace:
    agent = Agent(ScriptedModel([call("price", item=item), answer]), [price])
    return agent.run_sync(f"How much are the {item}?").trace


NON_ANSWERS = [
    "I am not sure about the price.",
    "Sorry, I could not find that.",
    "Let me check with the team.",
    "",
]


@settings(max_examples=150, deadline=None)
@given(
    count=st.integers(0, 500),
    amount=st.integers(1000, 10**6),  # never equal to the count
    order=st.integers(100, 9999),
    zero=st.sampled_from(ZEROS),
    variant=st.sampled_from(["same", "script", "fewer", "none", "other"]),
    non_answer=st.sampled_from(NON_ANSWERS),
)
def test_an_answer_is_graded_by_the_recorded_facts_it_states(
    count: int, amount: int, order: int, zero: int, variant: str, non_answer: str
) -> None:
    PRICES["apples"] = {"count": count, "price": amount, "order": f"ORD-{order}", "alt": amount + 1}
    recorded = _trace("apples", f"{count} apples cost {amount} euros (ORD-{order}).")
    new_answer = {
        "same": f"Order ORD-{order}: {amount} euros for {count} apples.",
        "script": f"ORD-{order}: {written(str(count), zero)} apples, "
        f"{written(str(amount), zero)} euros.",
        "fewer": f"That is {amount} euros.",
        "none": non_answer,
        "other": f"It would be {amount + 1} euros.",
    }[variant]
    new = _trace("apples", new_answer)
    findings = grade_answer(recorded, new, ReplayRules())
    if variant == "none" and not non_answer:
        assert findings[0].check == "no_answer" or findings[0].grade == "fail"
        return
    (finding,) = findings
    assert finding.check == "answer_changed"
    if variant in ("same", "script"):
        assert (finding.grade, finding.message) == (
            "warn",
            "the answer is worded differently; it states the same facts",
        )
    elif variant == "fewer":
        assert finding.grade == "warn"
        assert finding.message.startswith(
            "the answer changed and is supported by the evidence; it no longer states "
        )
    else:
        assert finding.grade == "fail"
        assert finding.message.startswith(
            f"the answer states none of the recorded facts ({count}, {amount}, ORD-{order})"
        )
        if variant == "other":
            assert finding.message.endswith(f"; it states {amount + 1} instead")


def test_the_reported_non_answer_fails() -> None:
    PRICES["apples"] = {"count": 4, "price": 8}
    recorded = _trace("apples", "4 apples cost 8 euros.")
    new = _trace("apples", "I am not sure about the price.")
    (finding,) = grade_answer(recorded, new, ReplayRules())
    assert (finding.grade, finding.check) == ("fail", "answer_changed")
    assert finding.message == "the answer states none of the recorded facts (4, 8)"


# -- model mode: a broken bound is named, not only the missing recording -------------------


@tool
def search(query: str, top_k: int = 5) -> list[str]:
    """Search the docs.

    Args:
        query: What to look for.
        top_k: How many results.
    """
    return [f"doc {i}" for i in range(top_k)]


def test_model_mode_names_the_bound_a_changed_argument_breaks() -> None:
    recorded = (
        Agent(ScriptedModel([call("search", query="refunds", top_k=5), "See doc 0."]), [search])
        .run_sync("How do refunds work?")
        .trace
    )

    def today(messages: list[Message], info: RequestInfo) -> Any:
        if messages[-1].role == "user":
            return call("search", query="refunds", top_k=50)
        return "See doc 0."

    rules = ReplayRules.from_dict({"tools": {"search": {"max_top_k": 20}}})
    report = replay(
        [recorded],
        mode="model",
        agent=lambda model, tools=None: Agent(model, tools or [search]),
        model=FunctionModel(today),
        rules=rules,
    )
    (sample,) = report.samples
    assert sample.grade == "fail"
    checks = [(f.grade, f.check) for f in sample.findings]
    assert checks == [("fail", "bounds"), ("fail", "no_fixture")]
    bound = sample.findings[0]
    assert bound.message.startswith("search: argument 'top_k' is out of bounds")
    assert (bound.recorded, bound.new) == (5, 50)
    assert json.dumps(sample.to_dict())  # still plain data
