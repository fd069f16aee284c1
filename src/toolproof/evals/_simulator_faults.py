"""The simulated user's own mistakes, found in the conversation without a model.

A user simulator can break its instructions in ways that make the agent look wrong: it
says what it should keep until asked, states facts it was never given (a second
passenger, a booking code), changes a fact it gave earlier, or leaves before the agent
could finish. A trial where that happened says nothing about the agent, so it gets its
own outcome, ``simulator_fault``.

The rules read English and the facts people type (ids, numbers, names):

- ``revealed``: a value of ``reveal_when_asked`` appears in a user message although no
  earlier agent message names it (a word of the fact's name, ``booking_code``: "booking"
  or "code").
- ``invented``: a user message states an id, a number or a name that neither the user's
  instructions (persona, situation, what it wants, what it knows) nor the agent's
  messages hold (the rules of ``grounded``, plus capitalised names mid-sentence).
- ``contradicted``: the user gives a fact ("my booking code is X", "the date is Y") a
  value other than one it gave before, or than the one it was given.
- ``ended_early``: the user left while the agent waited for its answer (the agent's last
  message asks a question that is not a closing "anything else?"), or its last message
  was never answered.

``tests/data/simulated_users/`` holds a labelled set of conversations on which
``bench/bench_simulated_users.py`` measures precision and recall.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from toolproof._grounding import check_grounding

if TYPE_CHECKING:
    from toolproof._messages import Message


class UserProfile(Protocol):
    """What the user was told (``toolproof.evals._users.UserProfile``)."""

    @property
    def knows(self) -> Mapping[str, str]: ...

    @property
    def reveal_when_asked(self) -> Sequence[str]: ...

    def texts(self) -> list[str]: ...


__all__ = ["FAULT_KINDS", "SimulatorFault", "simulator_faults"]

FaultKind = Literal["revealed", "invented", "contradicted", "ended_early"]
FAULT_KINDS: tuple[FaultKind, ...] = ("revealed", "invented", "contradicted", "ended_early")


@dataclass(frozen=True, slots=True)
class SimulatorFault:
    """One mistake of the simulated user.

    Attributes:
        kind: ``revealed``, ``invented``, ``contradicted`` or ``ended_early``.
        turn: The 1-based user turn where it happened.
        reason: What happened, quoting the conversation.
    """

    kind: FaultKind
    turn: int
    reason: str


def simulator_faults(
    profile: UserProfile,
    conversation: Sequence[Message],
    *,
    ended_by: str | None = "user",
    simulated: Sequence[bool] | None = None,
) -> list[SimulatorFault]:
    """The simulator's mistakes in ``conversation`` (the user's view: user and agent text).

    Args:
        profile: What the user was told (its instructions are the evidence it may use).
        conversation: ``user`` messages (the simulated user's) and ``assistant`` messages
            (the agent's answers), in order.
        ended_by: Who ended the conversation; ``ended_early`` applies when it was the user.
        simulated: Per user turn, whether the simulator wrote it (default: every turn).
            Turns written in the suite (fixed, or by your function) are not checked; what
            they say counts as given.

    Returns:
        Every mistake found, in the order of the conversation.
    """
    faults: list[SimulatorFault] = []
    given = profile.texts()
    agent_said: list[str] = []
    stated: list[_Stated] = [_Stated(slot, value, 0) for slot, value in _known_slots(profile)]
    revealed: set[str] = set()
    turn = 0
    for message in conversation:
        text = message.content or ""
        if message.role != "user":
            agent_said.append(text)
            continue
        turn += 1
        if simulated is not None and not (turn <= len(simulated) and simulated[turn - 1]):
            given.append(text)  # the suite's own words: what they say is given
            continue
        faults += _revealed(profile, text, turn, agent_said, revealed)
        contradicted, changed = _contradicted(text, turn, stated)
        faults += contradicted
        faults += _invented(text, turn, [*given, *agent_said], changed)
    last_simulated = simulated is None or (0 < turn <= len(simulated) and simulated[turn - 1])
    if ended_by == "user" and turn and last_simulated:
        faults += _ended_early(conversation[-1], turn)
    return faults


# -- revealed -----------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.casefold())


def _mentions(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` (case, spaces and punctuation aside)."""
    wanted = _words(value)
    if not wanted:
        return False
    have = _words(text)
    n = len(wanted)
    return any(have[i : i + n] == wanted for i in range(len(have) - n + 1))


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _asks_for(agent_text: str, name: str) -> bool:
    """Whether an agent message names the fact ``name`` (a word of it, 3+ letters)."""
    cues = {_stem(w) for w in _words(name.replace("_", " ")) if len(w) >= 3}
    return bool(cues & {_stem(w) for w in _words(agent_text)})


def _revealed(
    profile: UserProfile, text: str, turn: int, agent_said: Sequence[str], revealed: set[str]
) -> list[SimulatorFault]:
    """The facts kept until asked that this turn gives first, unasked (``revealed`` grows)."""
    faults = []
    for name in profile.reveal_when_asked:
        value = profile.knows.get(name, "")
        if name in revealed or not _mentions(text, value):
            continue
        revealed.add(name)
        if not any(_asks_for(said, name) for said in agent_said):
            faults.append(
                SimulatorFault(
                    "revealed",
                    turn,
                    f"turn {turn} gives {name} ({value!r}) before the agent asked for it",
                )
            )
    return faults


# -- invented -----------------------------------------------------------------------------------

#: Capitalised words that name no fact (sentence starts are skipped anyway).
_COMMON = frozenset(
    [
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "ok",
        "okay",
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank",
        "yes",
        "no",
        "please",
        "sure",
        "great",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "mr",
        "mrs",
        "ms",
        "dr",
        "sir",
        "madam",
    ]
)


def _names(text: str) -> list[str]:
    """Capitalised words that are not the first word of a sentence."""
    out = []
    for match in re.finditer(r"(?<=\s)([A-Z][a-z]+(?:'[a-z]+)?)\b", text):
        start = match.start()
        while start > 0 and text[start - 1].isspace():  # (one space, as a rule)
            start -= 1
        if start == 0 or text[start - 1] in ".!?:\"'(":
            continue
        word = match.group(1)
        if word.casefold() not in _COMMON:
            out.append(word)
    return out


def _invented(
    text: str, turn: int, evidence: list[str], changed: Sequence[str]
) -> list[SimulatorFault]:
    """The turn's facts found nowhere in ``evidence`` (a ``changed`` value is a contradiction)."""
    found = list(check_grounding(text, evidence).ungrounded)
    known = {w for item in evidence for w in _words(item)}
    for name in _names(text):
        if _stem(name.casefold()) not in {_stem(w) for w in known} and name not in found:
            found.append(name)
    invented = [t for t in found if not any(_mentions(value, t) for value in changed)]
    if not invented:
        return []
    shown = ", ".join(repr(token) for token in invented[:3])
    reason = f"turn {turn} states {shown}, which neither its instructions nor the agent mentioned"
    return [SimulatorFault("invented", turn, reason)]


# -- contradicted -------------------------------------------------------------------------------

_STATEMENT = re.compile(
    r"\b(?:my|the|our)\s+((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?:is|was|are|were|should be|number is)"
    r"\s+([A-Za-z0-9][\w./@-]*(?:\s+\d[\w./-]*)?)",
    re.IGNORECASE,
)

#: Words after "is" that are no value ("my flight is delayed" states no fact).
_NOT_VALUES = frozenset(
    [
        "a",
        "an",
        "the",
        "not",
        "still",
        "already",
        "now",
        "also",
        "just",
        "very",
        "too",
        "so",
        "on",
        "in",
        "at",
        "to",
        "for",
        "from",
        "with",
        "delayed",
        "cancelled",
        "canceled",
        "late",
        "wrong",
        "broken",
        "missing",
        "correct",
        "right",
        "fine",
        "good",
        "ok",
        "okay",
        "available",
        "gone",
        "due",
        "booked",
        "confirmed",
    ]
)


def _statements(text: str) -> Iterable[tuple[str, str]]:
    """``(slot, value)`` of statements such as "my booking code is ABC123"."""
    for match in _STATEMENT.finditer(text):
        slot = " ".join(_words(match.group(1)))
        value = match.group(2).rstrip(".,")
        if value.casefold() in _NOT_VALUES or not re.search(r"\d|[A-Z]", value):
            continue  # only ids, numbers, dates and names are checked
        yield slot, value


@dataclass(slots=True)
class _Stated:
    slot: str
    value: str
    turn: int  # 0: the user's instructions


#: Words that name the kind of a fact, not which fact ("order number", "order id").
_GENERIC = frozenset(["number", "code", "id", "name", "my", "the", "our", "of"])


def _same_slot(a: str, b: str) -> bool:
    """Whether two fact names name the same fact ("order id", "order number")."""
    wa, wb = {_stem(w) for w in a.split()}, {_stem(w) for w in b.split()}
    sa, sb = wa - _GENERIC, wb - _GENERIC
    return bool(sa & sb) if sa and sb else wa == wb


def _known_slots(profile: UserProfile) -> Iterable[tuple[str, str]]:
    for name, value in profile.knows.items():
        yield " ".join(_words(name.replace("_", " "))), value


def _same(a: str, b: str) -> bool:
    return _words(a) == _words(b)


def _contradicted(
    text: str, turn: int, stated: list[_Stated]
) -> tuple[list[SimulatorFault], list[str]]:
    """The turn's statements that change a fact given before, and their new values.

    ``stated`` holds each fact's latest value; it takes the turn's new and changed facts.
    """
    faults: list[SimulatorFault] = []
    changed: list[str] = []
    for slot, value in _statements(text):
        before = next((s for s in stated if _same_slot(s.slot, slot)), None)
        if before is None:
            stated.append(_Stated(slot, value, turn))
            continue
        if _same(before.value, value) or _mentions(text, before.value):
            continue
        where = "its instructions" if before.turn == 0 else f"turn {before.turn}"
        faults.append(
            SimulatorFault(
                "contradicted",
                turn,
                f"turn {turn} says the {slot} is {value!r}; {where} said {before.value!r}",
            )
        )
        changed.append(value)
        stated.remove(before)
        stated.append(_Stated(before.slot, value, turn))
    return faults, changed


# -- ended early --------------------------------------------------------------------------------

_CLOSING = re.compile(
    r"\b(anything else|something else|any other|further (?:help|questions|assistance)|"
    r"else (?:i|we) can help)\b",
    re.IGNORECASE,
)
_WAITING = re.compile(
    r"\b(please confirm|can you confirm|could you confirm|shall i|should i|would you like|"
    r"do you want|let me know (?:if|which|whether)|please (?:provide|tell|share|send|give))\b",
    re.IGNORECASE,
)


def _last_sentence(text: str) -> str:
    parts = [p for p in re.split(r"(?<=[.!?])\s+", text.strip()) if p]
    return parts[-1] if parts else text


def _ended_early(last: Message, turn: int) -> list[SimulatorFault]:
    """Whether the user left after ``turn`` while the agent still needed it (``last``)."""
    if last.role == "user":
        reason = f"the user left after turn {turn} before the agent answered it"
    elif _awaits_answer(last.content or ""):
        question = _last_sentence(last.content or "")
        reason = f"the user left while the agent waited for its answer ({question!r})"
    else:
        return []
    return [SimulatorFault("ended_early", turn, reason)]


def _awaits_answer(text: str) -> bool:
    """Whether the agent's message waits for the user's answer (not a closing question)."""
    last = _last_sentence(text)
    if _CLOSING.search(last):
        return False
    return last.rstrip().endswith("?") or bool(_WAITING.search(last))
