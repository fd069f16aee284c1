"""The trace format: versioned, readable JSON that round-trips exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Message, ToolCall, ToolResult, Trace, Usage, UserError, tool
from toolproof._trace import TRACE_VERSION, ErrorInfo, RequestSummary, Step, ToolInfo, stable_hash
from toolproof.testing import ScriptedModel, call

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=4)
calls = st.builds(
    ToolCall, name=st.text(min_size=1, max_size=8), arguments=arguments, id=st.text(max_size=6)
)
results = st.builds(
    ToolResult,
    call_id=st.text(max_size=6),
    name=st.text(max_size=8),
    status=st.sampled_from(["ok", "error"]),
    content=st.text(max_size=30),
    value=json_values,
    error_type=st.none() | st.text(max_size=8),
    duration_ms=st.floats(0, 1e6),
)
usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**6),
    cached_tokens=st.integers(0, 10),
    details=st.dictionaries(st.text(max_size=5), st.integers(0, 99), max_size=2),
)
steps = st.builds(
    Step,
    index=st.integers(1, 50),
    request=st.builds(RequestSummary, message_count=st.integers(0, 99)),
    response=st.builds(
        Message.assistant,
        st.none() | st.text(max_size=20),
        st.lists(calls, max_size=3),
        reasoning=st.none() | st.text(max_size=10),
    ),
    usage=usages,
    tool_results=st.lists(results, max_size=3),
    parse_errors=st.lists(st.text(max_size=10), max_size=2),
    cost=st.none() | st.floats(0, 10),
)
traces = st.builds(
    Trace,
    id=st.text(min_size=1, max_size=12),
    input=st.text(max_size=40),
    history=st.lists(st.builds(Message.user, st.text(max_size=10)), max_size=2),
    system_prompt=st.none() | st.text(max_size=20),
    tools=st.lists(
        st.builds(
            ToolInfo,
            name=st.text(max_size=5),
            description=st.text(max_size=5),
            parameters=st.just({"type": "object"}),
            schema_hash=st.text(max_size=4),
        ),
        max_size=2,
    ),
    steps=st.lists(steps, max_size=3),
    output=st.none() | st.text(max_size=20),
    stop_reason=st.sampled_from(
        ["final", "max_steps", "budget", "repeated_call", "cancelled", "error"]
    ),
    error=st.none() | st.builds(ErrorInfo, type=st.text(max_size=5), message=st.text(max_size=5)),
    usage=usages,
    metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    tags=st.lists(st.text(max_size=5), max_size=3),
)


# 100 examples: generating whole traces is the cost here; hostile values have their own,
# smaller, property test in test_trace_readback.py.
@settings(max_examples=100, deadline=None)
@given(trace=traces)
def test_any_trace_round_trips_exactly(trace: Trace) -> None:
    assert Trace.from_json(trace.to_json()) == trace
    assert Trace.from_dict(json.loads(trace.to_json(indent=2))) == trace


def test_a_real_run_round_trips_and_records_everything() -> None:
    @tool
    def multiply_numbers(a: float, b: float) -> float:
        """Multiply two numbers.

        Args:
            a: The first factor.
            b: The second factor.
        """
        return a * b

    agent = Agent(
        ScriptedModel([call("multiply_numbers", a=12, b=8), "96"]),
        [multiply_numbers],
        system_prompt="HR",
    )
    trace = agent.run_sync("12 x 8?", metadata={"case": "multiply"}, tags=["smoke"]).trace
    data = json.loads(trace.to_json())
    assert data["version"] == TRACE_VERSION == 1
    assert data["system_prompt_hash"] == stable_hash("HR")
    assert data["tools"][0]["schema_hash"] == multiply_numbers.schema_hash
    assert data["steps"][0]["response"]["tool_calls"][0] == {
        "name": "multiply_numbers",
        "arguments": {"a": 12, "b": 8},
        "id": "call_1",
        "raw_arguments": None,
        "arguments_error": None,
    }
    assert data["steps"][0]["tool_results"][0]["value"] == 96.0
    assert data["metadata"] == {"case": "multiply"} and data["tags"] == ["smoke"]
    assert data["started_at"].endswith("Z") and data["ended_at"] >= data["started_at"]
    assert Trace.from_json(trace.to_json()) == trace
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("not json", "not a toolproof trace: invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"id": "x"}', "has no integer 'version' field"),
        (
            '{"version": 99, "id": "x", "input": ""}',
            "version 99 is newer than this toolproof understands",
        ),
        ('{"version": 0, "id": "x", "input": ""}', "version 0 is no longer supported"),
    ],
)
def test_unreadable_traces_say_what_is_wrong(payload: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        Trace.from_json(payload)


def test_summary_mentions_outcome_and_calls() -> None:
    trace = Trace(
        id="t1",
        input="x",
        model="m",
        stop_reason="max_steps",
        stop_detail="stopped",
        steps=[
            Step(
                1,
                RequestSummary(2),
                Message.assistant(None, [ToolCall("f", {"a": 1}, "c")]),
                tool_results=[ToolResult("c", "f", "error", "bad")],
            ),
        ],
    )
    text = trace.summary()
    assert (
        "stop=max_steps" in text
        and "tool_errors=1" in text
        and "f(a=1)" in text
        and "detail: stopped" in text
    )
    pairs: list[Any] = list(trace.calls_and_results())
    assert pairs[0][1].content == "bad"
