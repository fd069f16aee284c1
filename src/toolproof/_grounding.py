"""Grounding: numbers and ids in an answer must come from the input or a tool result.

Seed 000 found a live model routing correctly and then inventing an employee "E1001" and an
"addition" tool. Routing checks cannot see that; this check can: every number and every id
(a token mixing letters and digits, such as ``E1001``, ``ORD-123``, ``mia_li_3668``) in the
answer must appear in the evidence. Numbers compare by value (``96`` matches ``96.0`` and
``1,000`` matches ``1000``); ids compare case-insensitively.

By default integers from 0 to 10 standing alone are not checked: answers count things ("3
flights", "step 2") that no tool result spells out, and flagging them would bury real
inventions. ``check_small_numbers=True`` checks them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from toolproof._trace import Trace

__all__ = ["GroundingResult", "check_grounding", "extract_claims", "trace_evidence"]

# An id: letters and digits mixed, optionally joined by - _ . / (E1001, ORD-123, mia_li_3668).
# Found by _id_spans in one pass over each run of these characters: a pattern with look-aheads
# took time quadratic in the run ("a-a-a-..." of 32 KB in a tool result: 9 s).
_RUN = re.compile(r"[\w./-]+", re.ASCII)
_JOINERS = "./-"
# A number: optional sign, thousands separators, decimals. Not part of a word.
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])[-+]?\d+(?:\.\d+)?", re.ASCII
)


@dataclass(frozen=True, slots=True)
class GroundingResult:
    """Which claims of an answer are supported by the evidence.

    Attributes:
        ungrounded: Numbers and ids in the answer found in no evidence text, in order.
        checked: Every number and id that was checked.
    """

    ungrounded: list[str]
    checked: list[str]

    @property
    def ok(self) -> bool:
        """Whether every checked claim is grounded."""
        return not self.ungrounded


def extract_claims(text: str, *, check_small_numbers: bool = False) -> tuple[list[str], list[str]]:
    """The ids and the numbers mentioned in ``text`` (ids first, then numbers outside ids)."""
    spans = _id_spans(text)
    ids = [text[start:end] for start, end in spans]
    masked = _mask(text, spans)
    numbers = []
    for m in _NUMBER.finditer(masked):
        token = m.group(0)
        value = _number_value(token)
        if value is None:
            continue
        if not check_small_numbers and value.is_integer() and 0 <= value <= 10 and "." not in token:
            continue
        numbers.append(token)
    return ids, numbers


def check_grounding(
    answer: str, evidence: Iterable[str], *, check_small_numbers: bool = False
) -> GroundingResult:
    """Check that every number and id in ``answer`` appears in ``evidence``.

    Args:
        answer: The final answer.
        evidence: The texts the answer may rely on (input, tool results, system prompt).
        check_small_numbers: Also check standalone integers from 0 to 10.

    Returns:
        The ungrounded claims and everything checked.
    """
    evidence_text = "\n".join(evidence)
    evidence_ids = {token.lower() for token in _tokens(evidence_text)}
    evidence_numbers = set()
    for m in _NUMBER.finditer(evidence_text):
        value = _number_value(m.group(0))
        if value is not None:
            evidence_numbers.add(value)
    ids, numbers = extract_claims(answer, check_small_numbers=check_small_numbers)
    ungrounded = [token for token in ids if token.lower() not in evidence_ids]
    for token in numbers:
        value = _number_value(token)
        if value is not None and value not in evidence_numbers and -value not in evidence_numbers:
            ungrounded.append(token)
    return GroundingResult(ungrounded=ungrounded, checked=ids + numbers)


def trace_evidence(trace: Trace, *, include_system_prompt: bool = True) -> list[str]:
    """The texts a run's answer may rely on: user input and history, tool results, prompt."""
    texts = [trace.input]
    texts.extend(m.content or "" for m in trace.history if m.role in ("user", "tool"))
    texts.extend(result.content for result in trace.tool_results)
    if include_system_prompt and trace.system_prompt:
        texts.append(trace.system_prompt)
    return texts


def _tokens(text: str) -> set[str]:
    out = {text[start:end] for start, end in _id_spans(text)}
    out.update(re.findall(r"[A-Za-z0-9][\w-]*", text, re.ASCII))
    return out


def _id_spans(text: str) -> list[tuple[int, int]]:
    """Where the ids of ``text`` are, in time linear in its length.

    An id starts at a letter or digit that begins a run of word characters and ``. / -``
    (or follows one of ``. / -`` in it), ends at the run's last letter or digit not followed
    by a word character, and contains a letter and a digit. A run holds at most one id: when
    its first possible start fails, every later start fails too.
    """
    spans = []
    for run in _RUN.finditer(text):
        start, stop = run.span()
        first = next(
            (
                i
                for i in range(start, stop)
                if _is_alnum(text[i]) and (i == start or text[i - 1] in _JOINERS)
            ),
            None,
        )
        if first is None:
            continue
        last = next(
            (
                j
                for j in range(stop - 1, first, -1)
                if _is_alnum(text[j]) and (j + 1 == stop or text[j + 1] in _JOINERS)
            ),
            None,
        )
        if last is None:
            continue
        rest = text[first:stop]
        if any(c.isalpha() for c in rest) and any(c.isdigit() for c in rest):
            spans.append((first, last + 1))
    return spans


def _is_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by a space."""
    parts = []
    position = 0
    for start, end in spans:
        parts.append(text[position:start])
        parts.append(" ")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _number_value(token: str) -> float | None:
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None
