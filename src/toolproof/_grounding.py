"""Grounding: numbers, times and ids in an answer must come from the input or a tool result.

A live model can route a request correctly and still invent what it reports: an employee
"E1001" that no tool returned, "7 days" of leave when the tool said 5. Routing checks cannot
see that; this check can: every claim of the answer must appear in the evidence (the input,
the conversation, the tool results, the system prompt).

What counts as a claim, and when it is grounded:

- **Ids**, tokens mixing letters and digits (``E1001``, ``ORD-123``, ``mia_li_3668``),
  compare case-insensitively with the evidence's ids and words.
- **Numbers** compare by value (``96`` matches ``96.0``, ``1,000`` matches ``1000``,
  ``-4`` matches ``4``). The evidence's numbers include digits inside ids (``7504069`` is
  grounded by ``gift_card_7504069``) and the last four digits of long digit runs ("the card
  ending in 7447" by ``4421207447``). Ordinals and number-word compounds are numbers:
  ``10th`` is 10 (grounded by the date ``2024-05-10``), ``24-hour`` is 24 (grounded by "24
  hours").
- **Times** (``07:00 PM``, ``14:30``, ``9 am``) compare as times of day: ``07:00 PM`` is
  grounded by ``19:00:00``, ``14:30`` by ``14:30``.
- **Small numbers** (integers from 0 to 10 written without a decimal point) are checked too,
  but answers count things no tool spells out ("I found 3 flights"), so a small number is
  also grounded when it equals the length of a list in the evidence (a JSON array in a tool
  result, at any depth) or the number of items of a list the answer itself enumerates
  (numbered or bulleted lines). The list markers ``1.``, ``2.``, ``-`` are not claims.
  ``check_small_numbers=False`` skips small numbers altogether.

So "We have 3 units" fails when the tool said ``{"units": 7}``, and "I found 3 flights" passes
when the tool returned an array of three flights or the answer lists the three of them. What
stays ungrounded is what the answer works out itself: a total, a difference, a date "the next
day": a number no tool returned is reported even when the arithmetic is right.

Digits of every script count as the digits they are: ``７天`` (full-width), ``٧`` (Arabic-Indic)
and ``७`` (Devanagari) state 7, ``٣٬٤٥٦٫٥`` states 3456.5 (:func:`plain_digits`, used by the
answer, the evidence and replay's comparison of answers alike).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolproof._trace import Trace

__all__ = [
    "GroundingResult",
    "check_grounding",
    "extract_claims",
    "plain_digits",
    "stated_facts",
    "trace_evidence",
]

# A word that may be an id: letters and digits, optionally joined by - _ . / (E1001,
# ORD-123, mia_li_3668); it is an id when it mixes letters and digits. (Matching the words
# first and testing them after keeps the scan linear on hostile text such as "a-a-a-...".)
_WORD = re.compile(r"(?<![\w])[A-Za-z0-9][\w./-]*", re.ASCII)
_LETTER = re.compile(r"[A-Za-z]", re.ASCII)
_DIGIT = re.compile(r"\d", re.ASCII)
# Tokens shaped like ids that are numbers: ordinals (10th, 1st) and compounds (24-hour).
_NUMERIC_ID = re.compile(r"(\d+(?:\.\d+)?)(?:st|nd|rd|th|(?:-[a-z]{3,})+)", re.ASCII)
# A number: optional sign, thousands separators, decimals. Not part of a word.
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])[-+]?\d+(?:\.\d+)?", re.ASCII
)
# A time of day: 07:00, 7:00:00, 07:00 PM, 9 am, 9 a.m.
_TIME = re.compile(
    r"(?:(?<=\dT)|(?<![\w:.]))(\d{1,2})(?::([0-5]\d)(?::[0-5]\d(?:\.\d+)?)?"
    r"(?:\s*([AaPp])(?:\.[Mm]\.?|[Mm]\b))?|\s*([AaPp])(?:\.[Mm]\.?|[Mm]\b))(?![\w:])",
    re.ASCII,
)
# A run of digits anywhere, even inside a word (the 7504069 of gift_card_7504069).
_DIGITS = re.compile(r"\d+", re.ASCII)
# A list item: "1. ", "2) ", "- ", "* ", "• " at the start of a line (after indentation).
_LIST_ITEM = re.compile(r"^([ \t]*)(?:([-*•+])|(\d{1,3})[.)])[ \t]+(?=\S)", re.M)
_SMALL = range(11)


@dataclass(frozen=True, slots=True)
class GroundingResult:
    """Which claims of an answer are supported by the evidence.

    Attributes:
        ungrounded: Numbers, times and ids in the answer found in no evidence, in order.
        checked: Every number, time and id that was checked.
    """

    ungrounded: list[str]
    checked: list[str]

    @property
    def ok(self) -> bool:
        """Whether every checked claim is grounded."""
        return not self.ungrounded


@dataclass(frozen=True, slots=True)
class _Claim:
    kind: str  # "id", "number" or "time"
    token: str  # as written
    value: Any  # the id lower-cased, the number as a float, the time as (hour, minute)
    small: bool = False  # an integer 0-10 written without a decimal point
    start: int = 0  # where it is written


#: Signs and separators written with other characters than ASCII's.
_SEPARATORS = {0x066B: ord("."), 0x066C: ord(","), 0x2212: ord("-"), 0xFE63: ord("-")}


class _PlainTable(dict[int, int]):
    """``str.translate`` table of :func:`plain_digits`, filled as characters are met."""

    def __missing__(self, code: int) -> int:
        value = unicodedata.decimal(chr(code), None)
        if value is not None:  # a decimal digit of any script
            plain = 48 + value
        elif 0xFF01 <= code <= 0xFF5E:  # full-width forms of ASCII characters
            plain = code - 0xFEE0
        else:
            plain = _SEPARATORS.get(code, code)
        if len(self) < 4096:  # hostile text with many distinct characters stays bounded
            self[code] = plain
        return plain


_PLAIN = _PlainTable()


def plain_digits(text: str) -> str:
    """``text`` with every decimal digit written as an ASCII digit, character for character.

    Digits of every script (full-width ``７``, Arabic-Indic ``٧``, Devanagari ``७``...), the
    full-width forms of ASCII characters, the Arabic decimal and thousands separators and
    the minus sign become their ASCII counterparts. Each character maps to one character,
    so positions in the result are positions in ``text``.
    """
    if text.isascii():
        return text
    return text.translate(_PLAIN)


def _ids(text: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """The ids of ``text`` and their spans.

    An id starts at a letter or digit not preceded by a word character, runs over word
    characters and ``. / -``, ends at the last letter or digit that ends the run or comes
    before one of ``. / -``, is at least two characters long, and its run holds a letter and
    a digit (``E1001``, ``ORD-123``, ``v2.0``; not ``E1001_``).
    """
    for m in _WORD.finditer(text):
        word = m.group(0)
        if not (_LETTER.search(word) and _DIGIT.search(word)):
            continue
        end, size = len(word), len(word)
        while end > 1 and not (word[end - 1].isalnum() and (end == size or word[end] in "./-")):
            end -= 1
        if end > 1:
            yield word[:end], (m.start(), m.start() + end)


def _clock(hour: int, minute: int, meridiem: str | None) -> tuple[int, int] | None:
    if meridiem is None:
        return (hour, minute) if hour < 24 else None
    if not 1 <= hour <= 12:
        return None
    hour %= 12
    return (hour + 12 if meridiem in "Pp" else hour, minute)


def _times(text: str) -> Iterator[tuple[re.Match[str], tuple[int, int]]]:
    for m in _TIME.finditer(text):
        hour, minute, meridiem, bare_meridiem = m.group(1), m.group(2), m.group(3), m.group(4)
        if minute is None:  # "9 am": an hour with a meridiem
            clock = _clock(int(hour), 0, bare_meridiem)
        else:
            clock = _clock(int(hour), int(minute), meridiem)
        if clock is not None:
            yield m, clock


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _number_value(token: str) -> float | None:
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _is_small(token: str, value: float) -> bool:
    """An integer from 0 to 10 written plainly (not ``3.0``, ``-4`` or a zero-padded ``05``)."""
    return token.isdigit() and value in _SMALL and (len(token) == 1 or token == "10")


def _list_items(text: str) -> tuple[list[tuple[int, int]], set[int]]:
    """The spans of the answer's numbered-list markers and the lengths of its lists.

    A list is a run of items of one kind (numbered, or one bullet character) at one
    indentation; deeper lines and blank lines continue it, other text ends it.
    """
    markers: list[tuple[int, int]] = []
    lengths: set[int] = set()
    runs: dict[tuple[int, str], int] = {}  # (indentation, kind) -> items in the open list
    offset = 0
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        m = _LIST_ITEM.match(line)
        # A line ends the lists indented deeper; plain text also ends those at its own depth.
        closing = [key for key in runs if key[0] > indent or (m is None and key[0] == indent)]
        for key in closing:
            lengths.add(runs.pop(key))
        if m is None:
            continue
        key = (indent, m.group(2) or "1.")
        runs[key] = runs.get(key, 0) + 1
        if m.group(3) is not None:
            markers.append((start + m.start(3), start + m.end(3)))
    lengths.update(runs.values())
    return markers, lengths


def _claims(written: str, *, check_small_numbers: bool) -> list[_Claim]:
    """The claims of ``written``: ids, times, then numbers (list markers are not claims).

    They are read from its :func:`plain_digits` form; each keeps its token as written.
    """
    text = plain_digits(written)
    found = list(_times(text))
    times = [
        _Claim("time", written[m.start() : m.end()].strip(), clock, False, m.start())
        for m, clock in found
    ]
    spans = [m.span() for m, _ in found]
    ids: list[_Claim] = []
    numbers: list[_Claim] = []
    for token, span in _ids(_mask(text, spans)):
        shown, start = written[span[0] : span[1]], span[0]
        numeric = _NUMERIC_ID.fullmatch(token)
        if numeric is not None:  # 10th, 24-hour
            value = float(numeric.group(1))
            small = _is_small(numeric.group(1), value)
            numbers.append(_Claim("number", shown, value, small, start))
        else:
            ids.append(_Claim("id", shown, token.lower(), False, start))
        spans.append(span)
    markers, _ = _list_items(text)
    for m in _NUMBER.finditer(_mask(text, [*spans, *markers])):
        token = m.group(0)
        number = _number_value(token)
        if number is not None:
            shown = written[m.start() : m.end()]
            numbers.append(_Claim("number", shown, number, _is_small(token, number), m.start()))
    numbers.sort(key=lambda claim: claim.start)
    claims = [*ids, *times, *numbers]
    if not check_small_numbers:
        claims = [c for c in claims if not c.small]
    return claims


def extract_claims(text: str, *, check_small_numbers: bool = False) -> tuple[list[str], list[str]]:
    """The ids and the numbers (with times) mentioned in ``text``, as written.

    Args:
        text: The text, usually an answer.
        check_small_numbers: Include integers from 0 to 10 (list markers never count).

    Returns:
        ``(ids, numbers)``: ids first, then the times and numbers outside ids, in order.
    """
    claims = _claims(text, check_small_numbers=check_small_numbers)
    return [c.token for c in claims if c.kind == "id"], [c.token for c in claims if c.kind != "id"]


def stated_facts(text: str, *, check_small_numbers: bool = True) -> dict[tuple[str, Any], str]:
    """What ``text`` states, by value: ids, numbers and times, as first written, in order.

    ``"E001 has 5 days"`` and ``"e001: ５ days"`` state the same facts: the keys,
    ``("id", "e001")`` and ``("number", 5.0)``, are equal.
    """
    facts: dict[tuple[str, Any], str] = {}
    claims = _claims(text, check_small_numbers=check_small_numbers)
    for claim in sorted(claims, key=lambda claim: claim.start):  # in the order written
        facts.setdefault((claim.kind, claim.value), claim.token)
    return facts


def _array_lengths(value: Any, into: set[int], depth: int = 0) -> None:
    if depth > 50:
        return
    if isinstance(value, list):
        into.add(len(value))
        for item in value:
            _array_lengths(item, into, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _array_lengths(item, into, depth + 1)


def _json_lengths(texts: Iterable[str]) -> set[int]:
    lengths: set[int] = set()
    for text in texts:
        stripped = text.strip()
        if not stripped or stripped[0] not in "[{":
            continue
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            continue
        _array_lengths(parsed, lengths)
    return lengths


@dataclass(slots=True)
class _Evidence:
    ids: set[str]
    numbers: set[float]  # numbers standing alone
    embedded: set[float]  # digit runs inside ids, and the last four digits of long runs
    times: set[tuple[int, int]]
    counts: set[int]  # lengths of the JSON arrays

    @classmethod
    def of(cls, texts: list[str]) -> _Evidence:
        texts = [plain_digits(text) for text in texts]
        text = "\n".join(texts)
        ids = {token.lower() for token in _tokens(text)}
        numbers: set[float] = set()
        for m in _NUMBER.finditer(text):
            value = _number_value(m.group(0))
            if value is not None:
                numbers.add(value)
        embedded: set[float] = set()
        for m in _DIGITS.finditer(text):
            digits = m.group(0)
            embedded.add(float(digits))  # gift_card_7504069
            if len(digits) > 4:
                embedded.add(float(digits[-4:]))  # "the card ending in 7447"
        times = {clock for _, clock in _times(text)}
        return cls(ids, numbers, embedded, times, _json_lengths(texts))

    def supports(self, claim: _Claim, answer_lists: set[int]) -> bool:
        if claim.kind == "id":
            return bool(claim.value in self.ids)
        if claim.kind == "time":
            return bool(claim.value in self.times)
        value = claim.value
        if value in self.numbers or -value in self.numbers:
            return True
        if not claim.small:
            # Digits inside an id ground a number, but not a count: E001 says nothing
            # about "1 day".
            return value in self.embedded
        return int(value) in self.counts or int(value) in answer_lists


def check_grounding(
    answer: str, evidence: Iterable[str], *, check_small_numbers: bool = True
) -> GroundingResult:
    """Check that every number, time and id in ``answer`` appears in ``evidence``.

    The rules are in this module's docstring: numbers by value (digits inside ids count),
    times as times of day, ids case-insensitively, and small integers (0-10) also by the
    length of a list in the evidence or in the answer.

    Args:
        answer: The final answer.
        evidence: The texts the answer may rely on (input, tool results, system prompt).
        check_small_numbers: Check integers from 0 to 10 as well (the default); ``False``
            skips them.

    Returns:
        The ungrounded claims and everything checked.
    """
    texts = list(evidence)
    facts = _Evidence.of(texts)
    claims = _claims(answer, check_small_numbers=check_small_numbers)
    _, answer_lists = _list_items(plain_digits(answer))
    ungrounded = [c.token for c in claims if not facts.supports(c, answer_lists)]
    return GroundingResult(ungrounded=ungrounded, checked=[c.token for c in claims])


def trace_evidence(trace: Trace, *, include_system_prompt: bool = True) -> list[str]:
    """The texts a run's answer may rely on: user input and history, tool results, prompt."""
    texts = [trace.input]
    texts.extend(m.content or "" for m in trace.history if m.role in ("user", "tool"))
    texts.extend(result.content for result in trace.tool_results)
    if include_system_prompt and trace.system_prompt:
        texts.append(trace.system_prompt)
    return texts


def _tokens(text: str) -> set[str]:
    out = {token for token, _ in _ids(text)}
    out.update(re.findall(r"[A-Za-z0-9][\w-]*", text, re.ASCII))
    return out
