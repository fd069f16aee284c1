"""Nothing lost: hostile return values and exits raised inside tools.

A value JSON cannot hold is a bug in the tool: the run stops with ``ToolCrashed`` carrying
the partial trace, which still serialises and reaches the recorder. A lone surrogate is
escaped and reported to the model as usual. ``SystemExit``, ``KeyboardInterrupt`` and
``GeneratorExit`` raised by a tool are tool bugs too (``ToolCrashed``), whatever way the
tool runs (sync, async, in a thread, with a time limit).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof import Agent, Trace, tool
from toolproof.errors import ToolCrashed, ToolError
from toolproof.replay import Recorder, Redactor, TraceStore
from toolproof.testing import ScriptedModel, call


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _cycle() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cyclic_dict() -> dict[str, Any]:
    data: dict[str, Any] = {"a": 1}
    data["self"] = data
    return data


UNSERIALISABLE = {
    "undecodable bytes": lambda: b"\xff\xfe\xfa",
    "huge int": lambda: 10**5000,
    "huge int inside": lambda: {"n": [10**5000]},
    "reference cycle": _cycle,
    "dict cycle": _cyclic_dict,
    "5000-deep nesting": lambda: _deep(5000),
    "unprintable object": Unprintable,
    "unprintable inside": lambda: {"x": [Unprintable()]},
}


def agent_returning(make: Any, recorder: Recorder | None = None) -> Agent:
    @tool
    def hostile() -> Any:
        """Return something hostile."""
        return make()

    return Agent(ScriptedModel([call("hostile"), "done"]), [hostile], recorder=recorder)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(UNSERIALISABLE))
def test_an_unserialisable_return_value_is_a_tool_crash_with_the_trace(name: str) -> None:
    with pytest.raises(ToolCrashed) as info:
        agent_returning(UNSERIALISABLE[name]).run_sync("go")
    error = info.value
    assert error.tool_name == "hostile"
    assert "tool 'hostile' returned a value that cannot be turned into JSON" in str(error)
    assert len(str(error)) < 600
    trace = error.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and trace.error.tool_name == "hostile"
    assert Trace.from_json(trace.to_json()).to_dict() == trace.to_dict()
    json.dumps(trace.to_dict()).encode("utf-8")


def test_the_recorder_keeps_the_trace_of_such_a_run(tmp_path: Path) -> None:
    store = tmp_path / "traces.db"
    recorder = Recorder(store, redactor=Redactor.none(), flush_interval=0.01)
    for make in UNSERIALISABLE.values():
        with pytest.raises(ToolCrashed):
            agent_returning(make, recorder).run_sync("go")
    assert recorder.close(30)
    assert recorder.stats.dropped == 0
    with TraceStore(store) as traces:
        stored = list(traces.query())
    assert len(stored) == len(UNSERIALISABLE)
    assert all(t.stop_reason == "error" for t in stored)


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("\ud800", "\\ud800"),
        ("ok \udfff end", "ok \\udfff end"),
        ({"k": "\ud800", "\udc00": 1}, '{"k": "\\\\ud800", "\\\\udc00": 1}'),
    ],
)
def test_lone_surrogates_are_escaped_and_the_run_continues(value: Any, content: str) -> None:
    result = agent_returning(lambda: value).run_sync("go")
    assert result.output == "done"
    assert result.trace.tool_results[0].content == content
    result.trace.to_json().encode("utf-8")


def test_a_tool_error_with_a_surrogate_or_a_broken_message_reaches_the_model() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("broken")

    @tool(errors=(Broken,))
    def flaky(kind: str) -> str:
        """Fail.

        Args:
            kind: How.
        """
        if kind == "surrogate":
            raise ToolError("bad \ud800 input")
        raise Broken(Unprintable())

    agent = Agent(
        ScriptedModel([[call("flaky", kind="surrogate"), call("flaky", kind="broken")], "done"]),
        [flaky],
    )
    results = agent.run_sync("go").trace.tool_results
    assert results[0].content == "Error (ToolError): bad \\ud800 input"
    assert results[1].error_type == "Broken" and "cannot be shown" in results[1].content


EXITS = [SystemExit(3), KeyboardInterrupt(), GeneratorExit()]


def _exit_tools(error: BaseException) -> dict[str, Any]:
    @tool
    def sync_tool() -> str:
        """Exit."""
        raise error

    @tool
    async def async_tool() -> str:
        """Exit."""
        await asyncio.sleep(0)
        raise error

    @tool(thread=True)
    def thread_tool() -> str:
        """Exit."""
        raise error

    @tool(timeout=30)
    async def limited_tool() -> str:
        """Exit."""
        raise error

    @tool(timeout=30)
    def limited_sync_tool() -> str:
        """Exit."""
        raise error

    return {
        t.name: t for t in (sync_tool, async_tool, thread_tool, limited_tool, limited_sync_tool)
    }


@pytest.mark.parametrize("error", EXITS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    "name", ["sync_tool", "async_tool", "thread_tool", "limited_tool", "limited_sync_tool"]
)
def test_exits_raised_by_a_tool_are_tool_crashes(error: BaseException, name: str) -> None:
    tools = _exit_tools(error)
    agent = Agent(ScriptedModel([call(name), "done"]), list(tools.values()))
    with pytest.raises(ToolCrashed) as info:
        agent.run_sync("go")
    assert f"tool '{name}' raised {type(error).__name__}" in str(info.value)
    assert info.value.__cause__ is error
    trace = info.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and trace.error.type == type(error).__name__


def test_exits_in_parallel_calls_stop_the_run_not_the_process() -> None:
    tools = _exit_tools(SystemExit(1))
    agent = Agent(
        ScriptedModel([[call("async_tool"), call("limited_tool"), call("thread_tool")], "done"]),
        list(tools.values()),
    )
    with pytest.raises(ToolCrashed, match="tool 'async_tool' raised SystemExit"):
        agent.run_sync("go")


def test_cancellation_keeps_its_meaning() -> None:
    @tool
    async def slow() -> str:
        """Wait."""
        await asyncio.sleep(30)
        return "late"

    agent = Agent(ScriptedModel([call("slow"), "done"]), [slow])

    async def main() -> None:
        task = asyncio.ensure_future(agent.run("go"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60)
@given(
    value=JSONISH
    | st.binary(max_size=20)
    | st.integers(min_value=10**4400, max_value=10**4500)
    | st.builds(_deep, st.integers(min_value=1, max_value=3000))
)
def test_any_return_value_gives_a_result_or_a_crash_never_a_lost_trace(value: Any) -> None:
    crash: ToolCrashed | None = None
    try:
        result = agent_returning(lambda: value).run_sync("go")
    except ToolCrashed as exc:
        crash = exc
    trace = result.trace if crash is None else crash.trace
    assert trace is not None
    assert trace.stop_reason == ("final" if crash is None else "error")
    trace.to_json().encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.integers(), st.floats(), st.booleans(), st.none(), st.sampled_from([-0.0, 1e308, 5e-324])
    )
)
def test_a_number_returned_by_a_tool_reads_as_json_writes_it(value: Any) -> None:
    from toolproof._toolset import _render

    jsonable, content = _render(value)
    assert jsonable is value
    assert content == json.dumps(value)
