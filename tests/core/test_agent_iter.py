"""``Agent.iter``: the run one step at a time, with the same result and trace as ``Agent.run``.

``run`` is built on the same stepping code, so every scenario is run both ways and the traces
compared field by field (only ids, clock times and durations may differ). Stopping early, errors
and cancellation are tried through ``iter`` itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolproof import Agent, Budget, Message, RunResult, ToolError, Trace, tool
from toolproof._agent import BaseAgent, RunOptions
from toolproof.errors import ModelFailed, ToolCrashed, UserError
from toolproof.events import Event, ModelStep, RunFinished, RunStarted, ToolsStep
from toolproof.testing import FunctionModel, RequestInfo, ScriptedModel, call

VOLATILE_TRACE = {"id", "started_at", "ended_at", "duration_ms"}
VOLATILE_STEP = {"offset_ms", "latency_ms"}
VOLATILE_RESULT = {"duration_ms"}


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool
def refuse(reason: str) -> str:
    """Always refuse.

    Args:
        reason: Why.
    """
    raise ToolError(f"refused: {reason}")


@tool
def buggy(x: int) -> int:
    """A tool with a bug.

    Args:
        x: Input.
    """
    raise RuntimeError("division by zero, somewhere deep")


@tool
async def slow(x: int) -> int:
    """Wait a while.

    Args:
        x: Input.
    """
    await asyncio.sleep(0.01)
    return x


TOOLS = [multiply_numbers, refuse, buggy, slow]


def comparable(trace: Trace) -> dict[str, Any]:
    """The trace as data without what depends on the clock or on a random id."""
    data = trace.to_dict()
    for key in VOLATILE_TRACE:
        data.pop(key, None)
    for step in data.get("steps", []):
        for key in VOLATILE_STEP:
            step.pop(key, None)
        for result in step.get("tool_results", []):
            for key in VOLATILE_RESULT:
                result.pop(key, None)
    return data


SCENARIOS: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "final after one tool": ([call("multiply_numbers", a=12, b=8), "96"], {}),
    "parallel calls": (
        [
            [call("multiply_numbers", a=1, b=2), call("slow", x=3), call("refuse", reason="no")],
            "ok",
        ],
        {},
    ),
    "tool error goes back to the model": ([call("refuse", reason="policy"), "sorry"], {}),
    "bad arguments": ([call("multiply_numbers", a="x"), "sorry"], {}),
    "max_steps": ([call("multiply_numbers", a=1, b=i) for i in range(5)], {"max_steps": 3}),
    "model call budget": (
        [call("multiply_numbers", a=1, b=i) for i in range(5)],
        {"budget": Budget(max_model_calls=2)},
    ),
    "token budget": (
        [call("multiply_numbers", a=1, b=2), "done"],
        {"budget": Budget(max_tokens=5)},
    ),
    "time limit while a tool runs": (
        [call("slow", x=1), "never"],
        {"budget": Budget(max_seconds=0.005)},
    ),
    "repeated call": ([call("multiply_numbers", a=1, b=2)] * 4, {"max_repeated_calls": 3}),
    "empty answer": ([""], {}),
}


def agent_for(script: list[Any], options: dict[str, Any], events: list[Event]) -> Agent:
    options = dict(options)
    budget = options.pop("budget", None)
    return Agent(
        ScriptedModel(script),
        TOOLS,
        system_prompt="You are a calculator.",
        budget=budget,
        on_event=events.append,
        **options,
    )


async def drive(agent: Agent, question: str) -> tuple[RunResult, list[Any]]:
    items: list[Any] = []
    async with agent.iter(question) as run:
        async for item in run:
            items.append(item)
    assert run.result is not None
    return run.result, items


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_iter_gives_the_same_result_trace_and_events_as_run(name: str) -> None:
    script, options = SCENARIOS[name]
    run_events: list[Event] = []
    iter_events: list[Event] = []
    by_run = await agent_for(script, options, run_events).run("question")
    by_iter, items = await drive(agent_for(script, options, iter_events), "question")

    assert comparable(by_iter.trace) == comparable(by_run.trace)
    assert (by_iter.output, by_iter.stop_reason) == (by_run.output, by_run.stop_reason)
    assert by_iter.messages == by_run.messages
    assert [type(e) for e in iter_events] == [type(e) for e in run_events]
    # Steps come in order: a model step for each step, a tools step when its tools ran.
    assert items[-1] is by_iter and isinstance(items[-1], RunResult)
    steps = by_iter.trace.steps
    expected: list[tuple[type, int]] = []
    for step in steps:
        expected.append((ModelStep, step.index))
        if step.tool_results:
            expected.append((ToolsStep, step.index))
    assert [(type(i), i.step.index) for i in items[:-1]] == expected
    for item in items[:-1]:
        assert item.step is steps[item.step.index - 1]  # the trace's own step, not a copy


async def test_a_caller_can_stop_before_the_tools_run_and_keeps_the_trace() -> None:
    ran: list[int] = []

    @tool
    def side_effect(x: int) -> int:
        """Do something irreversible.

        Args:
            x: Input.
        """
        ran.append(x)
        return x

    events: list[Event] = []
    recorded: list[Trace] = []

    class Keep:
        def record(self, trace: Trace) -> None:
            recorded.append(trace)

    agent = Agent(
        ScriptedModel([call("side_effect", x=1), "done"]),
        [side_effect],
        on_event=events.append,
        recorder=Keep(),
    )
    async with agent.iter("go") as run:
        async for item in run:
            assert isinstance(item, ModelStep)
            assert [c.name for c in item.step.response.tool_calls] == ["side_effect"]
            break
    assert ran == []  # the call was never executed
    assert run.result is not None and run.result.stop_reason == "cancelled"
    assert run.result.stop_detail == "the caller stopped the run early"
    assert run.result.output is None
    assert recorded == [run.result.trace] and run.trace is run.result.trace
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert len(run.result.trace.steps) == 1 and run.result.trace.ended_at
    # The conversation handed back stops before the unanswered call (safe as history).
    assert [m.role for m in run.result.messages] == ["user"]
    async for _ in run:  # a finished run yields nothing more
        raise AssertionError("nothing expected")


async def test_an_exception_in_the_caller_stops_the_run_and_propagates() -> None:
    agent = Agent(ScriptedModel([call("multiply_numbers", a=1, b=2), "2"]), TOOLS)
    run = agent.iter("go")

    async def fail_in_the_middle() -> None:
        async with run:
            async for _ in run:
                raise LookupError("the caller's own error")

    with pytest.raises(LookupError, match="caller's own"):
        await fail_in_the_middle()
    assert run.result is not None and run.result.stop_reason == "cancelled"


async def test_leaving_before_the_first_step_still_ends_the_run() -> None:
    events: list[Event] = []
    model = ScriptedModel(["never asked"])
    agent = Agent(model, TOOLS, on_event=events.append)
    async with agent.iter("go") as run:
        pass
    assert model.requests == []
    assert run.result is not None and run.result.stop_reason == "cancelled"
    assert [type(e) for e in events] == [RunStarted, RunFinished]


async def test_a_tool_bug_is_raised_from_the_iteration_with_the_partial_trace() -> None:
    script = [call("multiply_numbers", a=2, b=3), call("buggy", x=1), "never"]
    with pytest.raises(ToolCrashed) as by_run:
        await Agent(ScriptedModel(script), TOOLS).run("go")
    seen: list[Any] = []
    run = Agent(ScriptedModel(script), TOOLS).iter("go")

    async def collect() -> None:
        async with run:
            async for item in run:
                seen.append(item)

    with pytest.raises(ToolCrashed) as by_iter:
        await collect()
    assert [type(i) for i in seen] == [ModelStep, ToolsStep, ModelStep]
    run_trace, iter_trace = by_run.value.trace, by_iter.value.trace
    assert run_trace is not None and iter_trace is not None
    assert comparable(iter_trace) == comparable(run_trace)
    assert iter_trace.stop_reason == "error" and by_iter.value.step == 2
    assert run.result is None and run.trace is iter_trace


async def test_a_model_failure_is_raised_from_the_iteration() -> None:
    def broken(messages: list[Message], info: RequestInfo) -> str:
        raise ConnectionError("connection reset")

    seen: list[Any] = []

    async def collect() -> None:
        async for item in Agent(FunctionModel(broken), TOOLS).iter("go"):
            seen.append(item)

    with pytest.raises(ModelFailed, match="connection reset") as failed:
        await collect()
    assert seen == []
    assert failed.value.trace is not None and failed.value.trace.stop_reason == "error"


@pytest.mark.timeout(60)
async def test_time_limit_applies_to_the_iteration_and_ends_with_budget() -> None:
    async def slow_model(messages: list[Message], info: RequestInfo) -> str:
        await asyncio.Event().wait()  # never answers: only the time limit ends the iteration
        return "late"

    agent = Agent(FunctionModel(slow_model), TOOLS, budget=Budget(max_seconds=0.05))
    result, items = await drive(agent, "x")
    assert result.stop_reason == "budget" and result.stop_detail == "time limit reached (0.05 s)"
    assert items == [result]


async def test_time_spent_between_steps_counts_toward_the_limit() -> None:
    async def answer(messages: list[Message], info: RequestInfo) -> Any:
        await asyncio.sleep(0)  # a real model suspends
        if info.step == 1:
            return call("multiply_numbers", a=1, b=2)
        return "2"

    agent = Agent(FunctionModel(answer), TOOLS, budget=Budget(max_seconds=0.05))
    items = []
    async with agent.iter("x") as run:
        async for item in run:
            items.append(item)
            if isinstance(item, ToolsStep):
                await asyncio.sleep(0.2)  # the caller dawdles past the deadline
    assert run.result is not None and run.result.stop_reason == "budget"
    assert run.result.stop_detail == "time limit reached (0.05 s)"
    assert [type(i) for i in items] == [ModelStep, ToolsStep, RunResult]


async def test_cancelling_the_task_that_iterates_ends_with_cancelled() -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever(x: int) -> int:
        """Wait.

        Args:
            x: Input.
        """
        started.set()
        await asyncio.sleep(60)
        return x

    finished: list[Trace] = []

    def on_event(event: Event) -> None:
        if isinstance(event, RunFinished):
            finished.append(event.trace)

    traces: dict[str, Trace] = {}
    for way in ("run", "iter"):
        finished.clear()
        started.clear()
        agent = Agent(
            ScriptedModel([call("wait_forever", x=1), "never"]), [wait_forever], on_event=on_event
        )

        async def by_iter(agent: Agent = agent) -> None:
            async with agent.iter("x") as run:
                async for _ in run:
                    pass

        task = asyncio.create_task(agent.run("x") if way == "run" else by_iter())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (trace,) = finished
        assert trace.stop_reason == "cancelled" and trace.stop_detail == "the run was cancelled"
        assert [c.name for c in trace.tool_calls] == ["wait_forever"] and trace.ended_at
        traces[way] = trace
    assert comparable(traces["iter"]) == comparable(traces["run"])


async def test_an_outer_timeout_is_not_mistaken_for_the_run_budget() -> None:
    async def slow_model(messages: list[Message], info: RequestInfo) -> str:
        await asyncio.sleep(5)
        return "late"

    agent = Agent(FunctionModel(slow_model), TOOLS, budget=Budget(max_seconds=30))
    finished: list[Trace] = []
    agent.handlers.append(
        lambda e: finished.append(e.trace) if isinstance(e, RunFinished) else None
    )
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await agent.run("x")
    assert finished[0].stop_reason == "cancelled"


async def test_iter_of_an_agent_wrapping_another_loop_yields_only_the_result() -> None:
    class Wrapped(BaseAgent):  # runs someone else's loop behind the run contract
        async def run_with(self, input: str, options: RunOptions) -> RunResult:
            return await Agent(ScriptedModel([f"echo {input}"])).run(input)

    items = [item async for item in Wrapped(ScriptedModel([])).iter("hi")]
    assert len(items) == 1 and isinstance(items[0], RunResult) and items[0].output == "echo hi"


async def test_every_entry_point_of_a_subclass_goes_through_its_run_with() -> None:
    seen: list[str] = []

    class Logged(Agent):
        async def run_with(self, input: str, options: RunOptions) -> RunResult:
            seen.append(input)
            return await super().run_with(input, options)

    agent = Logged(ScriptedModel([call("multiply_numbers", a=2, b=3), "6", "again"]), TOOLS)
    result = await agent.run("2 times 3")
    assert await agent.session().run("once more") is not None
    assert seen == ["2 times 3", "once more"]
    assert result.output == "6" and [s.index for s in result.trace.steps] == [1, 2]


def test_iter_checks_its_input_like_run() -> None:
    agent = Agent(ScriptedModel(["x"]))
    with pytest.raises(UserError, match="must be a string"):
        agent.iter(42)  # type: ignore[arg-type]


def test_the_documented_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    from pathlib import Path

    guide = Path(__file__).resolve().parents[2] / "docs" / "harness.md"
    section = guide.read_text(encoding="utf-8").split("## Step by step: `Agent.iter`")[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    exec(compile(block.group(1), "harness.md", "exec"), {"__name__": "harness"})
    assert capsys.readouterr().out.splitlines() == [
        "model asks for ['multiply_numbers(a=12, b=8)']",
        "tools gave ['96.0']",
        "12 x 8 = 96 final",
    ]
