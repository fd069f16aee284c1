"""OpenAI Agents SDK integration, against the real SDK (its tracing export switched off)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Runner, function_tool, set_trace_processors
from agents.tool_context import ToolContext
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Toolset, Trace, tool
from toolproof.integrations.openai_agents import (
    AgentsModel,
    ScriptedAgentsModel,
    TraceProcessor,
    from_function_tool,
    to_function_tool,
    trace_from_result,
)
from toolproof.replay import Recorder, TraceStore, replay
from toolproof.testing import FunctionModel, call


@tool(errors=(KeyError,))
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return {"a": "alpha"}[key]


@function_tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@pytest.fixture
def processor() -> Iterator[TraceProcessor]:
    processor = TraceProcessor()
    set_trace_processors([processor])
    yield processor
    set_trace_processors([])


def test_only_toolproofs_processor_receives_sdk_traces(processor: TraceProcessor) -> None:
    from agents.tracing import get_trace_provider
    from agents.tracing.processors import BatchTraceProcessor

    registered = get_trace_provider()._multi_processor._processors  # the SDK's registry
    assert list(registered) == [processor]
    assert not any(isinstance(p, BatchTraceProcessor) for p in registered)


async def test_a_function_tool_becomes_a_tool_with_its_schema() -> None:
    converted = from_function_tool(multiply)
    assert converted.name == "multiply"
    assert converted.parameters == multiply.params_json_schema
    result = await Toolset([converted]).execute(call("multiply", a=3, b=4))
    assert (result.status, result.content) == ("ok", "12.0")


async def test_hostile_json_arguments_are_reported_never_raised() -> None:
    (function,) = to_function_tool(lookup)
    context = ToolContext(context=None, tool_name="lookup", tool_call_id="c", tool_arguments="")
    for raw in ["", "{", "[1, 2]", '{"key": 5}', '{"key": "a", "x": 1}', "null", '"a"']:
        text = await function.on_invoke_tool(context, raw)
        assert isinstance(text, str) and text
    assert await function.on_invoke_tool(context, '{"key": "a"}') == "alpha"


@pytest.mark.timeout(300)
@settings(max_examples=30, deadline=None)
@given(raw=st.text(max_size=200))
def test_arbitrary_argument_text_never_crashes_a_function_tool(raw: str) -> None:
    (function,) = to_function_tool(lookup)
    context = ToolContext(context=None, tool_name="lookup", tool_call_id="c", tool_arguments=raw)
    text = asyncio.run(function.on_invoke_tool(context, raw))
    assert isinstance(text, str)


def test_any_toolproof_model_answers_the_runner(processor: TraceProcessor) -> None:
    def respond(messages: list[Any], info: Any) -> Any:
        if messages[-1].role == "tool":
            return f"The product is {messages[-1].content}."
        return call("multiply", a=6, b=7)

    model = AgentsModel(FunctionModel(respond, name="function"))
    agent = Agent(name="calc", instructions="Multiply.", model=model, tools=[multiply])
    result = _run(agent, "6 x 7?")
    assert result.final_output == "The product is 42.0."
    trace = trace_from_result(result)
    assert trace.tool_names == ["multiply"] and trace.output == result.final_output
    assert trace.model == "function"
    assert Trace.from_json(trace.to_json()) == trace
    assert processor.traces[-1].tool_results[0].content == "42.0"


def test_streaming_is_refused_with_advice() -> None:
    model = ScriptedAgentsModel(["hi"])
    agent = Agent(name="a", model=model)

    async def stream() -> None:
        run = Runner.run_streamed(agent, "hello")
        async for _ in run.stream_events():
            pass

    with pytest.raises(Exception, match=r"Runner\.run"):
        asyncio.run(stream())


def test_sdk_runs_are_recorded_and_replayed(tmp_path: Any) -> None:
    path = str(tmp_path / "traces.db")
    recorder = Recorder(path)
    processor = TraceProcessor(recorder=recorder)
    set_trace_processors([processor])
    try:
        model = ScriptedAgentsModel([call("lookup", key="a"), "It is alpha."])
        agent = Agent(name="kv", model=model, tools=to_function_tool(lookup))
        _run(agent, "What is a?")
    finally:
        set_trace_processors([])
    assert recorder.close()
    store = TraceStore(path)
    try:
        (stored,) = [store.get(processor.traces[-1].id)]
    finally:
        store.close()
    assert stored.tool_names == ["lookup"] and stored.output == "It is alpha."
    report = replay(path, mode="tools", tools=[lookup])
    assert report.exit_code == 0, report.render_text()


def _run(agent: Any, text: str) -> Any:
    # Runner.run_sync keeps an event loop open after the run; asyncio.run closes its own.
    return asyncio.run(Runner.run(agent, text))
