"""The grounding check: what it catches, what it must not flag, through every entry point.

The rules are in ``toolproof._grounding``'s docstring and ``docs/evals.md``. The last test
grounds the 200 recorded τ-bench runs (``tests/data``) against their own tool results: a
recorded answer replayed as is must never be flagged, except where it states a number it
worked out itself (a total, a difference, "the next day").
"""

from __future__ import annotations

import collections
import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _shared import shared_path
from _work import growth
from toolproof import Agent, Trace, tool
from toolproof._grounding import check_grounding, extract_claims, trace_evidence
from toolproof.testing import ScriptedModel, assert_grounded, call


def ungrounded(answer: str, *evidence: Any) -> list[str]:
    texts = [e if isinstance(e, str) else json.dumps(e) for e in evidence]
    return check_grounding(answer, texts).ungrounded


# ---- small numbers ------------------------------------------------------------------------


def test_a_wrong_small_number_is_caught_by_default() -> None:
    assert ungrounded("We have 3 units in stock.", {"sku": "A-17", "units": 7}) == ["3"]
    assert ungrounded("We have 7 units in stock.", {"sku": "A-17", "units": 7}) == []
    balance = {"employee_id": "E001", "days_left": 5}
    assert ungrounded("E001 has 7 days of leave left.", "How much leave has E001?", balance) == [
        "7"
    ]
    assert ungrounded("E001 has 5 days of leave left.", "How much leave has E001?", balance) == []


def test_digits_inside_an_id_do_not_ground_a_count() -> None:
    # E001 and A-17 contain a 1 and a 7; neither says anything about "1 day" or "7 units".
    assert ungrounded("E001 has 1 day left.", {"employee_id": "E001", "days_left": 5}) == ["1"]
    assert ungrounded("A-17: 7 units.", {"sku": "A-17", "units": 3}) == ["7"]


def test_a_count_is_grounded_by_the_length_of_a_list_a_tool_returned() -> None:
    flights = {"flights": [{"number": "HAT001"}, {"number": "HAT002"}, {"number": "HAT003"}]}
    assert ungrounded("I found 3 flights: HAT001, HAT002 and HAT003.", flights) == []
    assert ungrounded("I found 4 flights.", flights) == ["4"]
    nested = {"user": {"name": "Mia", "reservations": ["UM3OG5", "5RJ7UH"]}}
    assert ungrounded("You have 2 reservations.", nested) == []
    assert ungrounded("You have 0 upcoming trips.", {"trips": []}) == []


def test_a_count_is_grounded_by_a_list_the_answer_enumerates() -> None:
    result = {"HAT001": "JFK-SEA", "HAT002": "JFK-SFO", "HAT003": "JFK-LAX"}
    listed = "I found 3 flights:\n- HAT001 to Seattle\n- HAT002 to San Francisco\n- HAT003 to LA"
    assert ungrounded(listed, result) == []
    numbered = (
        "There are 2 options:\n1. HAT001 to Seattle\n   - leaves at 09:00\n   - arrives at"
        " 12:00\n2. HAT002 to San Francisco"
    )
    assert ungrounded(numbered, result, "09:00 12:00") == []
    assert ungrounded(listed.replace("3 flights", "4 flights"), result) == ["4"]


def test_list_markers_are_not_claims() -> None:
    answer = "Here are your reservations:\n1. UM3OG5\n2. 5RJ7UH\n3. FQ8APE\n4. QKRY03\n"
    ids = {"reservations": ["UM3OG5", "5RJ7UH", "FQ8APE", "QKRY03"]}
    assert check_grounding(answer, [json.dumps(ids)]).checked == [
        "UM3OG5",
        "5RJ7UH",
        "FQ8APE",
        "QKRY03",
    ]
    assert ungrounded(answer, ids) == []


def test_small_numbers_can_be_switched_off() -> None:
    result = check_grounding("We have 3 units.", ['{"units": 7}'], check_small_numbers=False)
    assert result.ok and result.checked == []


# ---- tokens that used to raise false alarms -----------------------------------------------


def test_number_word_compounds_and_ordinals_are_numbers() -> None:
    policy = "Reservations can be cancelled within 24 hours of booking."
    assert ungrounded("It is beyond the 24-hour cancellation window.", policy) == []
    assert ungrounded("It is beyond the 48-hour cancellation window.", policy) == ["48-hour"]
    trip = {"flights": [{"date": "2024-05-10"}, {"date": "2024-05-11"}]}
    assert ungrounded("Your trip on May 10th and 11th.", trip) == []
    assert ungrounded("Your trip on May 15th.", trip) == ["15th"]
    # They are claims like any number, not ids.
    assert extract_claims("the 2nd of 3-day passes", check_small_numbers=True) == (
        [],
        ["2nd", "3-day"],
    )


def test_numbers_inside_ids_the_tool_returned() -> None:
    methods = {"gift_card_7504069": {"balance": 250}, "credit_card_4421207447": {"brand": "visa"}}
    assert ungrounded("I used certificate 7504069 for $250.", methods) == []
    assert ungrounded("I used certificate 7504070 for $250.", methods) == ["7504070"]
    assert ungrounded("Charged to the Visa card ending in 7447.", methods) == []
    assert ungrounded("Charged to the Visa card ending in 7448.", methods) == ["7448"]


def test_times_compare_as_times_of_day() -> None:
    flight = {"departure": "19:00:00", "arrival": "2024-05-20T21:30:00"}
    assert ungrounded("It departs at 07:00 PM and lands at 9:30 pm.", flight) == []
    assert ungrounded("It departs at 19:00.", flight) == []
    # The tool said 19:00 (7 PM); 7 AM is a different time.
    assert ungrounded("It departs at 07:00 AM.", flight) == ["07:00 AM"]
    assert ungrounded("It departs at 08:00 PM.", flight) == ["08:00 PM"]
    assert ungrounded("Flights after 11 AM, please.", "after 11am") == []
    assert ungrounded("It lands at 9:30pm or 5pm.", flight, "17:00") == []
    assert ungrounded("It lands at 12:00 AM.", {"arrival": "00:00:00"}) == []


def test_existing_rules_still_hold() -> None:
    assert ungrounded("员工E1001的剩余年假为15天，E001有5天。", "查询员工E001的剩余年假", "5") == [
        "E1001",
        "15",
    ]
    assert ungrounded("Total: 1,250.5 USD for ord-123", {"price": 1250.5, "id": "ORD-123"}) == []
    assert ungrounded("The change is -4 degrees.", {"delta": 4}) == []


# ---- generated inputs and hostile ones ----------------------------------------------------

_WORDS = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)


@settings(max_examples=60)
@given(items=st.lists(_WORDS, max_size=10), other=st.integers(0, 10))
def test_generated_counts_of_a_returned_list(items: list[str], other: int) -> None:
    evidence = [json.dumps({"results": items})]
    assert check_grounding(f"I found {len(items)} results.", evidence).ok
    if other != len(items):
        assert check_grounding(f"I found {other} results.", evidence).ungrounded == [str(other)]


@settings(max_examples=60)
@given(value=st.integers(11, 10**9), shift=st.integers(1, 1000))
def test_generated_numbers_must_match_by_value(value: int, shift: int) -> None:
    evidence = [json.dumps({"id": f"gift_card_{value}", "amount": f"{value:,}"})]
    assert check_grounding(f"Card {value} holds {value:,}.", evidence).ok
    wrong = value + shift
    assert check_grounding(f"Card {wrong}.", evidence).ungrounded == [str(wrong)]


@pytest.mark.parametrize(
    "hostile",
    [
        "-" * 60_000,
        "a-" * 30_000,
        "a." * 30_000,
        "1," * 30_000,
        "12:00 " * 10_000,
        "1. x\n" * 15_000,
        "[" * 60_000,
        "9 am " * 12_000,
    ],
    ids=lambda text: repr(text[:6]),
)
@pytest.mark.timeout(120)
def test_hostile_text_is_checked_in_bounded_time(hostile: str) -> None:
    def check(text: str) -> None:
        check_grounding(text, [text])

    # Ten times the text may take at most 40 times the CPU time (quadratic work: 100 times).
    ratio = growth(check, hostile[: len(hostile) // 10], hostile)
    assert ratio < 40, ratio


# ---- entry points -------------------------------------------------------------------------


@tool
def get_stock(sku: str) -> dict[str, Any]:
    """Units in stock.

    Args:
        sku: The product.
    """
    return {"sku": sku, "units": 7}


def stock_run(answer: str) -> Trace:
    agent = Agent(ScriptedModel([call("get_stock", sku="A-17"), answer]), [get_stock])
    return agent.run_sync("How many A-17 do we have?").trace


def test_assert_grounded_checks_small_numbers_by_default() -> None:
    assert_grounded(stock_run("We have 7 units of A-17."))
    with pytest.raises(AssertionError, match="the final answer mentions '3'"):
        assert_grounded(stock_run("We have 3 units of A-17."))
    assert_grounded(stock_run("We have 3 units of A-17."), check_small_numbers=False)


def test_replay_grading_checks_small_numbers_by_default() -> None:
    from toolproof.replay._grading import grade_answer
    from toolproof.replay._rules import ReplayRules

    recorded = stock_run("We have 7 units of A-17.")
    assert ReplayRules().check_small_numbers
    assert grade_answer(recorded, recorded, ReplayRules()) == []
    (finding,) = grade_answer(recorded, stock_run("We have 3 units of A-17."), ReplayRules())
    assert (finding.check, finding.message) == (
        "ungrounded",
        "the answer states '3', found in neither the input nor any tool result",
    )


def test_replay_grading_takes_the_recorded_answer_as_its_baseline() -> None:
    from toolproof.replay._grading import grade_answer
    from toolproof.replay._rules import ReplayRules

    # The recorded answer works a total out itself (14 is in no tool result): replaying it
    # unchanged is not a regression, while a different invented total still fails.
    recorded = stock_run("We have 7 units of A-17, 14 counting the back room.")
    assert grade_answer(recorded, recorded, ReplayRules()) == []
    (finding,) = grade_answer(
        recorded, stock_run("We have 7 units of A-17, 15 counting the back room."), ReplayRules()
    )
    assert (finding.check, finding.message) == (
        "ungrounded",
        "the answer states '15', found in neither the input nor any tool result",
    )
    # A claim the recording had evidence for needs evidence in the new run too.
    unseen = Agent(ScriptedModel(["We have 7 units of A-17."]), [get_stock])
    (finding,) = grade_answer(
        stock_run("We have 7 units of A-17."),
        unseen.run_sync("How many A-17 do we have?").trace,
        ReplayRules(),
    )
    assert finding.check == "ungrounded" and "'7'" in finding.message


# ---- the τ-bench recorded runs ------------------------------------------------------------


def test_recorded_tau_bench_answers_are_grounded_by_their_own_tool_results() -> None:
    from toolproof.replay._import import read_trace_file

    tau: Path = shared_path("datasets", "tau-bench-airline-gpt4o")
    answered = [t for t in read_trace_file(tau / "gpt-4o-airline.json") if t.output]
    flagged: collections.Counter[str] = collections.Counter()
    answers_flagged = 0
    for trace in answered:
        result = check_grounding(trace.output or "", trace_evidence(trace))
        if not result.ok:
            answers_flagged += 1
            flagged.update(result.ungrounded)
    assert len(answered) == 1290
    # Before the rules above, 99 answers were flagged with small numbers skipped (147 with
    # them checked); 32 of them only for false alarms (24-hour, 10th, digits inside ids,
    # card endings), which are gone. 7 answers are newly flagged for small numbers: the
    # agent's own 2 x 2 = 4 and 3 x 2 = 6 bag allowances.
    assert answers_flagged == 74
    assert sum(flagged.values()) == 121
    # What remains are numbers the agent worked out (checked by hand, listed in
    # docs/evals.md): totals such as $17,021, differences, bag allowances (2 x 2 = 4), the
    # next day's date, durations. None is an id, a time, an ordinal or a compound.
    assert all(token.replace(",", "").replace(".", "").isdigit() for token in flagged)
    assert {"17,021", "368", "4", "6", "19", "2.5"} <= set(flagged)
    assert {token for token in flagged if len(token) == 1} == {"4", "6"}
