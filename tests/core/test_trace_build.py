"""The trace builder's rules, attacked with generated steps, results and tool messages.

The builder is the one place that numbers steps, pairs calls with results, sums usage and
cost and ends a recorded conversation; the declared shape of a trace is the one description
every walk over a trace reads. ``tests/integrations/test_trace_producers.py`` checks that
every producer gives the same trace of the same conversation.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof._trace import (
    JSON,
    KEPT,
    NUMBER,
    TEXT,
    TRACE_SHAPE,
    ErrorInfo,
    Step,
    Trace,
    schema_hash,
    stable_hash,
    tool_info,
)
from toolproof._trace_build import TraceBuilder, split_request


def test_the_declared_shape_names_every_field_of_every_trace_class() -> None:
    for cls, shape in TRACE_SHAPE.items():
        assert [f.name for f in dataclasses.fields(cls)] == list(shape), cls.__name__
        for name, held in shape.items():
            nested = held[0] if isinstance(held, list) else held
            assert nested in (KEPT, NUMBER, TEXT, JSON) or nested in TRACE_SHAPE, (cls, name)
    # every trace class nested in a Trace is declared
    assert {Trace, Step, Message, ToolCall, ToolResult, ErrorInfo} <= set(TRACE_SHAPE)


def test_redaction_keeps_exactly_the_declared_structure_and_numbers() -> None:
    from toolproof.replay._redact_walk import SHAPES, SKIP

    for cls, shape in TRACE_SHAPE.items():
        kept = {name for name, held in shape.items() if held in (KEPT, NUMBER)}
        assert {k for k, v in SHAPES[cls].items() if v is SKIP} == kept, cls.__name__


_TEXT = st.text(max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    name=_TEXT,
    description=_TEXT,
    parameters=st.dictionaries(_TEXT, st.one_of(st.integers(), _TEXT, st.booleans()), max_size=4),
)
def test_the_schema_hash_is_the_one_rule(
    name: str, description: str, parameters: dict[str, Any]
) -> None:
    info = tool_info(name, description, parameters)
    digest = stable_hash({"name": name, "description": description, "parameters": parameters})
    assert info.schema_hash == schema_hash(name, description, parameters) == digest


def _calls(rng: random.Random, step: int) -> list[ToolCall]:
    names = ["a", "b", "c"]
    return [ToolCall(rng.choice(names), {"n": i}, f"s{step}c{i}") for i in range(rng.randint(0, 4))]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_results_pair_with_their_calls_in_call_order_whatever_order_they_come(seed: int) -> None:
    rng = random.Random(seed)
    build = TraceBuilder(Trace(id="t", input="hi", system_prompt=rng.choice(["", "sys"])))
    usages, costs = [], []
    for n in range(rng.randint(0, 5)):
        calls = _calls(rng, n)
        usage = Usage(rng.randint(0, 99), rng.randint(0, 99), requests=1)
        cost = rng.choice([None, rng.random()]) if n else rng.random()
        step = build.step(
            Message.assistant("x" if not calls else None, calls), usage=usage, cost=cost
        )
        usages.append(usage)
        costs.append(cost)
        assert step.index == n + 1
        # results arrive in any order, some calls unanswered, some results answer no call
        answered = [c for c in calls if rng.random() < 0.8]
        arriving: list[ToolResult] = [ToolResult(c.id, "", "ok", c.id) for c in answered]
        orphans = [ToolResult(f"orphan{i}", "z", "ok", "?") for i in range(rng.randint(0, 2))]
        arriving += orphans
        rng.shuffle(arriving)
        for result in arriving:
            build.result(result)
        ids = [c.id for c in calls]
        got = [r.call_id for r in step.tool_results]
        paired = [i for i in got if i in ids]
        assert paired == [c.id for c in calls if c in answered]  # call order
        assert got[len(paired) :] == [r.call_id for r in arriving if r in orphans]  # then orphans
        for result in step.tool_results:  # each takes the name of the call it answers
            call = next((c for c in calls if c.id == result.call_id), None)
            assert result.name == (call.name if call else "z")
    trace = build.finish()
    assert [s.index for s in trace.steps] == list(range(1, len(trace.steps) + 1))
    assert trace.usage.input_tokens == sum(u.input_tokens for u in usages)
    assert trace.usage.output_tokens == sum(u.output_tokens for u in usages)
    assert trace.usage.requests == len(usages)
    known = [c for c in costs if c is not None]
    assert trace.cost == (sum(known) if costs and len(known) == len(costs) else None)
    assert trace.system_prompt_hash == (stable_hash("sys") if trace.system_prompt else None)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_tool_messages_answer_each_open_call_once(seed: int) -> None:
    rng = random.Random(seed)
    build = TraceBuilder(Trace(id="t", input="hi"))
    calls = _calls(rng, 1)
    step = build.step(Message.assistant(None, calls))
    # a request repeats old messages, duplicates answers and holds messages of other kinds
    messages = [Message.user("again")]
    for call in calls * 2 + [ToolCall("a", {}, "unknown")]:
        status = rng.choice([None, "ok", "error"])
        messages.append(Message("tool", f"text {call.id}", [], call.id, None, None, status))
    rng.shuffle(messages)
    build.answer(messages)
    build.answer(messages)  # the same request again: nothing answered twice
    assert [r.call_id for r in step.tool_results] == [c.id for c in calls]
    for result, call in zip(step.tool_results, calls, strict=True):
        first = next(m for m in messages if m.role == "tool" and m.tool_call_id == call.id)
        assert (result.name, result.content) == (call.name, first.text)
        assert result.status == (first.status or "ok")


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_recorded_conversation_ends_by_one_rule(seed: int) -> None:
    rng = random.Random(seed)
    build = TraceBuilder(Trace(id="t", input="hi"))
    for n in range(rng.randint(0, 3)):
        calls = _calls(rng, n)
        build.step(Message.assistant(rng.choice(["", "answer"]) if not calls else None, calls))
    error = ErrorInfo("Boom", "it broke") if rng.random() < 0.2 else None
    trace = build.finish(error=error)
    steps = trace.steps
    if error is not None:
        assert (trace.stop_reason, trace.output, trace.error) == ("error", None, error)
    elif not steps:
        assert trace.stop_reason == "error" and trace.output is None
    elif steps[-1].response.tool_calls:  # cut right after tool calls
        assert (trace.stop_reason, trace.output) == ("cancelled", None)
        assert "ended after tool calls" in (trace.stop_detail or "")
    else:
        assert (trace.stop_reason, trace.output) == ("final", steps[-1].response.content or "")
        assert (trace.stop_detail is None) == bool(trace.output)


@settings(max_examples=150, deadline=None)
@given(roles=st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), max_size=8))
def test_a_first_request_splits_into_system_history_and_input(roles: list[str]) -> None:
    messages = [Message(role, f"{role}{i}") for i, role in enumerate(roles)]  # type: ignore[arg-type]
    system, history, text = split_request(messages)
    systems = [m.text for m in messages if m.role == "system"]
    assert system == ("\n\n".join(systems) or None)
    rest = [m for m in messages if m.role != "system"]
    users = [i for i, m in enumerate(rest) if m.role == "user"]
    if users:
        assert (history, text) == (rest[: users[-1]], rest[users[-1]].text)
    else:
        assert (history, text) == (rest, "")
