"""The text-protocol parser is linear: no model output can stall the event loop.

Linear is measured as growth: ten times the input may cost at most 40 times the CPU time of
the same test's smaller input (see ``tests/_work.py``), so a busy machine cannot fail it.

The parser's earlier patterns stay here as the reference: on short inputs, where they are
fast, the scanner must give exactly their results.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _work import growth
from toolproof import Agent, ToolCall, tool
from toolproof._text import clip
from toolproof.models import TextProtocolModel, textproto
from toolproof.models.textproto import (
    ParsedToolCalls,
    ToolCallParseError,
    parse_tool_call_block,
    parse_tool_calls,
)
from toolproof.testing import ScriptedModel

CALL = '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'

# Pieces an adversary combines: fences with and without language, tags in every spelling,
# blanks, JSON and broken JSON, stray backticks.
PIECES = [
    "```",
    "```json\n",
    "```py ",
    "`",
    "<tool_call>",
    "</tool_call>",
    "<TOOL_CALL >",
    "</tool_call\n>",
    "<tool_call",
    "</tool_call",
    "<",
    ">",
    " ",
    "\n",
    "\t",
    "x",
    '{"name": "a"}',
    '{"name": "a", "arguments": {"x": 1}}',
    '[{"name": "b"}]',
    '{"name": ',
    "[" * 5,
    "{",
    '"',
    "json",
]

# The parser's patterns before the scanner (exponential on some inputs; fine on short ones).
_OLD_BLOCK = re.compile(
    r"<tool_call\s*>(?P<body>.*?)(?:</tool_call\s*>|(?=<tool_call\s*>)|\Z)", re.S | re.I
)
_OLD_FENCED = re.compile(
    r"```[\w+-]*[ \t]*\n?(?P<inner>\s*(?:<tool_call\s*>.*?</tool_call\s*>\s*)+)```", re.S | re.I
)
_OLD_FENCE_INSIDE = re.compile(r"\A```[\w+-]*[ \t]*\n?(?P<inner>.*?)\n?```\Z", re.S)


def old_parse(text: str) -> ParsedToolCalls:
    """The earlier parser, pattern for pattern, as the reference."""
    if "<" not in text or not _OLD_BLOCK.search(text):
        return ParsedToolCalls(text.strip() or None)
    text = _OLD_FENCED.sub(lambda m: m.group("inner"), text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    kept: list[str] = []
    position = number = 0
    for match in _OLD_BLOCK.finditer(text):
        number += 1
        kept.append(text[position : match.start()])
        position = match.end()
        try:
            # inside a block only the fence stripping changed; it is compared on its own below
            found = parse_tool_call_block(match.group("body"))
        except ToolCallParseError as exc:
            errors.append(f"block {number} ({clip(match.group(0), 80)!r}): {exc}")
            kept.append(match.group(0))
            continue
        calls.extend(found)
    kept.append(text[position:])
    rest = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
    return ParsedToolCalls(rest or None, calls, errors)


@pytest.mark.timeout(120)  # the earlier pattern took 13-20 s on 22 blocks: it fails here
def test_blocks_after_an_unclosed_fence_parse_in_linear_time() -> None:
    for count in (22, 200, 5_000):
        parsed = parse_tool_calls("```\n" + CALL * count)
        assert len(parsed.calls) == count and not parsed.errors
    # ten times the blocks, at most 40 times the CPU time (quadratic work: 100 times)
    ratio = growth(parse_tool_calls, "```\n" + CALL * 500, "```\n" + CALL * 5_000)
    assert ratio < 40, ratio


HOSTILE_SHAPES: dict[str, Callable[[int], str]] = {
    "open tags": lambda n: "<tool_call>" * n,
    "close tags": lambda n: "</tool_call>" * n,
    "fences": lambda n: "```" * n,
    "fence and blanks": lambda n: "```" + " " * n + "x",
    "tag and blanks": lambda n: ("<tool_call" + " " * 50) * (n // 10),
    "fenced pairs without closing fence": lambda n: (
        "```json\n<tool_call></tool_call> x " * (n // 10)
    ),
    "many fenced runs": lambda n: ("```\n" + CALL + "\n```\n") * (n // 10),
    "fenced block body": lambda n: "<tool_call>```" + "a" * n + "</tool_call>",
    "long word fence": lambda n: "<tool_call>```" + "a" * n + "```</tool_call>",
    "deep JSON": lambda n: "<tool_call>" + "[" * n + "</tool_call>",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(HOSTILE_SHAPES))
def test_hostile_shapes_parse_in_linear_time(name: str) -> None:
    shape = HOSTILE_SHAPES[name]
    assert isinstance(parse_tool_calls(shape(20_000)), ParsedToolCalls)
    # ten times the input, at most 40 times the CPU time (quadratic work: 100 times)
    ratio = growth(parse_tool_calls, shape(2_000), shape(20_000))
    assert ratio < 40, (name, ratio)


def test_a_fenced_run_loses_its_fences_and_keeps_its_prose() -> None:
    text = f"Sure.\n```json\n{CALL}\nthen\n{CALL}\n```\nDone."
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.calls] == ["add", "add"]
    assert parsed.text == "Sure.\n\nthen\n\nDone."
    unclosed = parse_tool_calls(f"```json\n{CALL} and prose")
    assert len(unclosed.calls) == 1 and unclosed.text == "```json\n and prose"


@settings(max_examples=400)
@given(st.lists(st.sampled_from(PIECES), max_size=10))
def test_the_scanner_gives_the_earlier_results(pieces: list[str]) -> None:
    text = "".join(pieces)
    new, old = parse_tool_calls(text), old_parse(text)
    assert new.text == old.text and new.errors == old.errors
    assert [(c.name, c.arguments) for c in new.calls] == [(c.name, c.arguments) for c in old.calls]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PIECES), max_size=10))
def test_a_fence_around_a_block_body_is_stripped_as_before(pieces: list[str]) -> None:
    text = "".join(pieces).strip()
    old = _OLD_FENCE_INSIDE.match(text)
    assert textproto._inside_fence(text) == (old.group("inner") if old else None)


@pytest.mark.timeout(300)
@settings(max_examples=60)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40), st.integers(1, 300))
def test_repeated_hostile_pieces_never_raise_and_stay_linear(pieces: list[str], times: int) -> None:
    unit = "".join(pieces)
    parsed = parse_tool_calls(unit * times)
    # ten times the repeats, at most 40 times the CPU time (quadratic work: 100 times)
    ratio = growth(parse_tool_calls, unit * 30, unit * 300)
    assert ratio < 40, (unit, ratio)
    assert all(c.id.startswith("call_") for c in parsed.calls)
    assert parsed.text is None or parsed.text == parsed.text.strip()


@pytest.mark.timeout(300)
@settings(max_examples=100)
@given(st.text(alphabet=st.sampled_from('`<>/ \n{}[]":,tool_call'), max_size=2_000))
def test_blocks_raise_only_the_documented_error(text: str) -> None:
    outcome: list[ToolCall] | ToolCallParseError
    try:
        outcome = parse_tool_call_block(text)
    except ToolCallParseError as exc:
        outcome = exc
    if isinstance(outcome, ToolCallParseError):
        assert str(outcome) and outcome.body == text
    else:
        assert outcome and all(c.name for c in outcome)


@pytest.mark.timeout(60)
def test_a_text_protocol_run_on_hostile_output_ends_quickly() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    hostile = "```\n" + CALL * 3_000
    agent = Agent(TextProtocolModel(ScriptedModel([hostile, "3"])), [add], max_repeated_calls=None)
    result = agent.run_sync("add")
    assert result.output == "3"
    assert len(result.trace.steps[0].tool_results) == 3_000
