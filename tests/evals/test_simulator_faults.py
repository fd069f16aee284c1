"""The simulated user's mistakes: measured on labelled conversations, attacked with generated ones.

The labelled sets (tests/data/simulated_users/) fix the detector's precision and recall;
generated conversations check each rule as a class: a faithful user (hidden facts given
only when asked, only given facts stated, one value per fact, answers every question) is
never flagged, and each injected mistake is found whatever its values.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simulated_users_corpus import scores

from toolproof import Message
from toolproof.evals._simulator_faults import simulator_faults
from toolproof.evals._users import UserProfile

#: Measured with bench/bench_simulated_users.py (written with the rules / held out).
MEASURED = {
    "main": {
        "any fault": (1.0, 1.0),
        "revealed": (1.0, 1.0),
        "invented": (1.0, 1.0),
        "contradicted": (1.0, 1.0),
        "ended_early": (1.0, 1.0),
    },
    "held_out": {"any fault": (1.0, 0.56)},
}
MARGIN = 0.1


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_precision_and_recall_stay_at_what_was_measured(name: str) -> None:
    results, wrong = scores(name)
    by_name = {score.name: score for score in results}
    for kind, (precision, recall) in MEASURED[name].items():
        score = by_name[kind]
        assert score.precision >= precision - MARGIN, (kind, score, wrong)
        assert score.recall >= recall - MARGIN, (kind, score, wrong)


codes = st.from_regex(r"[A-Z]{2,3}[0-9]{3,5}", fullmatch=True)
words = st.sampled_from(["booking code", "order id", "account number", "card number"])


@st.composite
def faithful(draw: st.DrawFn) -> tuple[UserProfile, list[Message], dict[str, str]]:
    names = draw(st.lists(words, min_size=1, max_size=3, unique=True))
    values = draw(st.lists(codes, min_size=len(names), max_size=len(names), unique=True))
    knows = {n.replace(" ", "_"): v for n, v in zip(names, values, strict=True)}
    hidden = tuple(k for k in knows if draw(st.booleans()))
    profile = UserProfile(
        instructions="You want help with your account.", knows=knows, reveal_when_asked=hidden
    )
    conversation = [Message("user", "Hi, I need help with my account.")]
    for name, value in knows.items():
        conversation.append(Message("assistant", f"Sure. What is your {name.replace('_', ' ')}?"))
        conversation.append(Message("user", f"My {name.replace('_', ' ')} is {value}."))
    conversation.append(Message("assistant", "All done. Is there anything else I can help with?"))
    conversation.append(Message("user", "No, thank you."))
    conversation.append(Message("assistant", "Goodbye."))
    return profile, conversation, knows


@settings(max_examples=150, deadline=None)
@given(faithful())
def test_a_faithful_user_is_never_flagged(
    case: tuple[UserProfile, list[Message], dict[str, str]],
) -> None:
    profile, conversation, _ = case
    assert simulator_faults(profile, conversation) == []


@settings(max_examples=100, deadline=None)
@given(faithful(), st.data())
def test_a_hidden_fact_given_unasked_is_found(case: tuple, data: st.DataObject) -> None:
    profile, conversation, knows = case
    name = data.draw(st.sampled_from(sorted(knows)))
    profile = UserProfile(profile.instructions, None, knows, (name,))
    opening = Message("user", f"Hi, here is everything: {knows[name]}.")
    faults = simulator_faults(profile, [opening, *conversation[1:]])
    assert [f.kind for f in faults if f.kind == "revealed"] == ["revealed"]
    assert faults[0].turn == 1 and repr(knows[name]) in faults[0].reason


@settings(max_examples=100, deadline=None)
@given(faithful(), codes)
def test_a_fact_never_given_is_found(case: tuple, extra: str) -> None:
    profile, conversation, knows = case
    if any(
        extra.casefold() in v.casefold() or v.casefold() in extra.casefold() for v in knows.values()
    ):
        return
    conversation = [
        *conversation[:-2],
        Message("user", f"Also add booking {extra} please."),
        conversation[-1],
    ]
    faults = simulator_faults(profile, conversation)
    assert [f.kind for f in faults] == ["invented"], faults
    assert repr(extra) in faults[0].reason


@settings(max_examples=100, deadline=None)
@given(faithful(), codes, st.data())
def test_a_fact_given_another_value_is_found(case: tuple, other: str, data: st.DataObject) -> None:
    profile, conversation, knows = case
    name = data.draw(st.sampled_from(sorted(knows)))
    if other.casefold() == knows[name].casefold():
        return
    spoken = name.replace("_", " ")
    conversation = [
        *conversation[:-2],
        Message("user", f"Sorry, my {spoken} is {other}."),
        conversation[-1],
    ]
    faults = simulator_faults(profile, conversation)
    assert [f.kind for f in faults] == ["contradicted"], faults


@pytest.mark.parametrize(
    "question",
    [
        "Shall I cancel it?",
        "Do you want the refund on your card?",
        "Please confirm the transfer of 250.00.",
        "Would you like seat 14A or 22F?",
    ],
)
def test_leaving_while_the_agent_waits_is_found_and_a_closing_question_is_not(
    question: str,
) -> None:
    profile = UserProfile(instructions="Cancel.")
    waiting = [Message("user", "Cancel please."), Message("assistant", question)]
    assert [f.kind for f in simulator_faults(profile, waiting)] == ["ended_early"]
    closing = [Message("user", "Cancel please."), Message("assistant", "Done. Anything else?")]
    assert simulator_faults(profile, closing) == []
    # The agent ended the conversation: the user did not leave.
    assert simulator_faults(profile, waiting, ended_by="agent_ended") == []
    # The suite wrote the last turn: its ending is the case's, not the simulator's.
    assert simulator_faults(profile, waiting, simulated=[False]) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "text",
    [
        "my a " * 40_000,
        "The " + "Aa " * 50_000,
        "x" * 200_000,
        "\u202e\x00\ufeff" * 10_000 + "My booking code is ABC123.",
    ],
)
def test_hostile_text_is_read_within_bounds(text: str) -> None:
    profile = UserProfile(
        instructions="Help.", knows={"booking_code": "ABC123"}, reveal_when_asked=("booking_code",)
    )
    conversation = [Message("user", text), Message("assistant", "Thanks."), Message("user", text)]
    faults = simulator_faults(profile, conversation)
    assert all(f.turn in (1, 2) for f in faults)
